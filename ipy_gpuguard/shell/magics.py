"""``%%gpuguard`` and ``%gpuguard``: parse what the person typed, then hand over to the session.

A guarded cell is run by the shell as the cell itself, not from inside a magic function. A
cleanup input transformer blanks the ``%%gpuguard`` line (after checking its options), and the
``pre_run_cell``/``post_run_cell`` events start and finish the guard. So the cell fails exactly
as it would without the magic (its ``execute_reply`` says ``error``, "Run All" stops there), its
traceback is IPython's own with the cell's own number and line numbers, ``%debug`` reaches the
user's frames, and top-level ``await`` and other cell magics below the first line keep working.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from IPython.core import magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import Pretty, display

from ..protocol import FIND_MAX, RETRY, Action, ActionArgs
from ..protocol.files import os_reason
from ..retry import AUTO_RETRY_RUNS, DEFAULT_RUNS, FIND_MAX_RUNS, retry_settings
from ..retry.outcome import Ending
from ..ui.history import HistoryTable
from .interrupts import CellStopped, StopCell, held_interrupt
from .nested_async import async_cells_runnable
from .options import (
    ON_HANG_CHOICES,
    GuardOptions,
    check_interval,
    check_timeout,
    parse_device_list,
)
from .pending_work import SURFACED

if TYPE_CHECKING:
    from ..retry import RunOutcome
    from .comm import ActionsComm
    from .config import GPUGuard
    from .kernel_state import KernelStateFile
    from .session import GuardSession

T = TypeVar("T")

_GUARD_LINE = re.compile(r"^%%gpuguard(?:[ \t]+(?P<options>.*?))?[ \t]*\r?\n?$")
#: A cell that starts with another cell magic and has ``%%gpuguard`` on a later line.
_GUARD_BELOW_A_MAGIC = re.compile(r"\A\s*%%(?!gpuguard\b).*\n(?:.*\n)*?%%gpuguard\b")


@magics_class
class GPUGuardMagics(Magics):
    """The magics, and the shell hooks that guard a cell."""

    def __init__(
        self,
        shell: Any,
        config: GPUGuard,
        open_session: Callable[[], GuardSession],
        state_file: KernelStateFile | None = None,
    ) -> None:
        super().__init__(shell)
        self.guard_config = config
        #: The kernel's state file (in a Jupyter kernel), which the session writes once open.
        self.state_file = state_file
        self._open_session = open_session
        self._session: GuardSession | None = None
        self.transformer = GuardedCellTransformer(self)
        #: Stops a cell whose guard was interrupted while it started (an AST transformer).
        self.stopper = StopCell()
        self.actions_comm: ActionsComm | None = None  # in a Jupyter kernel only
        #: Cells running now, this one included: pre_run_cell counts up, post_run_cell down.
        self._depth = 0
        #: The options the transformer checked, by their line: the cell's start takes them
        #: instead of parsing the line again.
        self.checked: tuple[str, GuardOptions] | None = None

    @property
    def session(self) -> GuardSession:
        """The session, opened when a guarded cell or ``%gpuguard`` first needs it.

        Opening it imports the diagnosis, the retry and the widgets: most of what the guard
        costs to import, which loading the extension does not pay.
        """
        if self._session is None:
            self._session = self._open_session()
            if self.actions_comm is not None:
                self.actions_comm.attach(self._session)
        return self._session

    @property
    def opened_session(self) -> GuardSession | None:
        """The session if a cell or a command has opened it."""
        return self._session

    @magic_arguments.magic_arguments()
    @magic_arguments.argument(
        "--interval",
        type=float,
        metavar="SECONDS",
        help="seconds between telemetry samples (default: %%config GPUGuard.interval, 0.5)",
    )
    @magic_arguments.argument(
        "--devices",
        metavar="0,1",
        help="framework indices of the GPUs to watch, as in GPU:0 (default: all visible)",
    )
    @magic_arguments.argument(
        "--no-panel", action="store_true", help="run guarded, but show no memory panel"
    )
    @magic_arguments.argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=(
            "seconds without progress (no step, main thread not moving) that make a stall "
            "(default: adaptive, 10 times the median step and at least 30 s; the first step of "
            "fit, evaluate and predict may take longer, see %%config GPUGuard.first_step_allowance)"
        ),
    )
    @magic_arguments.argument(
        "--on-hang",
        choices=ON_HANG_CHOICES,
        help=(
            "on a stall, report: show the hang card (default); interrupt: also interrupt the "
            "cell, in the thread that is stuck"
        ),
    )
    @magic_arguments.argument(
        "--auto-retry",
        nargs="?",
        const=DEFAULT_RUNS,
        type=int,
        metavar="N",
        help=(
            "on out of memory, run the cell again by itself with smaller batches, up to N "
            f"times (default {AUTO_RETRY_RUNS}, or {FIND_MAX_RUNS} with --find-max) until one fits"
        ),
    )
    @magic_arguments.argument(
        "--find-max",
        action="store_true",
        help=(
            "with --auto-retry, then search for the largest batch that fits (up to "
            f"{FIND_MAX_RUNS} runs in all unless --auto-retry N says otherwise)"
        ),
    )
    @magic_arguments.argument(
        "--margin",
        type=float,
        metavar="PERCENT",
        help="how close to a size that failed --find-max goes (default 10)",
    )
    @magic_arguments.argument(
        "--min-batch",
        type=int,
        metavar="N",
        help="the smallest batch a retry tries (default 1)",
    )
    @magic_arguments.argument(
        "--keep-effective-batch",
        action="store_true",
        help=(
            "when the batch shrinks k times, multiply the cell's gradient_accumulation_steps "
            "by k, so the optimisation stays the same"
        ),
    )
    @magic_arguments.argument(
        "--batch-var",
        metavar="NAME",
        help="the variable that holds the batch size, when the guard cannot tell",
    )
    @cell_magic("gpuguard")  # type: ignore[arg-type]  # IPython types the named form as a union
    def gpuguard_cell(self, line: str, cell: str) -> None:
        """Run a cell under the GPU guard.

        While the cell runs, a panel above its output shows each GPU's memory (the device's,
        from NVML, and the framework allocator's), utilisation, temperature and power; when the
        cell ends, however it ends, the panel freezes into a summary of peak memory and time.
        The cell itself runs exactly as without the magic. Put ``%%gpuguard`` on the first line
        of the cell, above any other cell magic.

        The panel also shows steps, steps per second and time per step: Keras' ``fit``,
        ``evaluate`` and ``predict`` report them by themselves, a custom loop by calling
        ``ipy_gpuguard.heartbeat()`` once per step. A cell that makes no progress for longer
        than ``--timeout`` gets a hang card while it still runs, saying where it is stuck;
        ``--on-hang interrupt`` also interrupts it. With ``--no-panel`` a stall is reported
        only when the cell ends.

        Without a GPU the cell still runs and the panel says which telemetry is missing and why.

        When the cell runs out of memory, the card under its traceback offers to run it again
        with a smaller batch (the batch size is found in the cell's code and only that number
        changes); ``--auto-retry`` does so by itself, ``--find-max`` also climbs back to the
        largest batch that fits. A batch size that fitted is remembered for the cell.
        """
        # Reached only when the shell did not run the cell itself: another cell magic came first,
        # or a script exported from a notebook calls run_cell_magic. Run it as a cell of its own.
        # Its failure is the caller's failure too: the caller's cell (or script) stops there.
        options = f" {line}" if line.strip() else ""
        assert self.shell is not None
        result = self.shell.run_cell(f"%%gpuguard{options}\n{cell}", store_history=False)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise GuardedCellFailed(error)

    @magic_arguments.magic_arguments()
    @magic_arguments.argument(
        "command",
        nargs="?",
        default="status",
        choices=["status", "doctor", "simulate", "history", "retry", "forecast"],
        help=(
            "status: telemetry, devices, their GPU watchdogs and settings; doctor: check the "
            "GPU environment (driver, CUDA, cuDNN, TensorFlow's build and GPUs, memory "
            "settings) and say what to fix; simulate: simulated GPUs when none is found; "
            "history: the recent incidents; retry: run the last cell that ran out of memory "
            "again with a smaller batch, as its card's button does; forecast: the memory "
            "forecast of the last guarded fit"
        ),
    )
    @magic_arguments.argument(
        "value",
        nargs="?",
        help=(
            "for simulate: sizes like 8GiB or 8GiB,16GiB, or off; for history: how many (10); "
            "for retry: the batch size (default: the card's), or max for the largest that fits"
        ),
    )
    @magic_arguments.argument(
        "--json",
        action="store_true",
        help=(
            "for doctor and forecast: return it as data (a dict), as in "
            "`report = %%gpuguard doctor --json`"
        ),
    )
    @line_magic("gpuguard")  # type: ignore[arg-type]  # IPython types the named form as a union
    def gpuguard_line(self, line: str) -> dict[str, Any] | None:
        """Inspect and set up the GPU guard.

        ``%gpuguard status`` shows the telemetry source, the devices, the watchdog of each GPU
        (Windows TDR, CUDA's run-time limit on kernels) and the settings;
        ``%gpuguard doctor`` checks the GPU environment before training: the driver against
        the CUDA TensorFlow was built with, the CUDA and cuDNN that load, which GPUs the driver
        and each framework see, memory settings, other processes and the GPU watchdog; each
        warning or problem comes with what to do (``--json``: the report as data; on the
        command line, ``python -m ipy_gpuguard doctor``);
        ``%gpuguard simulate 8GiB`` shows simulated GPUs where NVML finds none (``off`` to stop);
        ``%gpuguard history [N]`` shows the last N incidents (failures the guard diagnosed);
        ``%gpuguard retry [N|max]`` runs the last cell that ran out of memory again with batch
        size N (default: the one its card offers), or searches for the largest that fits.
        Defaults are set with ``%config GPUGuard``.
        """
        args = _parse(self.gpuguard_line, line, "%gpuguard")
        if args.json and args.command not in ("doctor", "forecast"):
            raise UsageError(
                "%gpuguard: --json goes with doctor or forecast, as in %gpuguard doctor --json"
            )
        if args.command == "doctor":
            if args.value is not None:
                raise UsageError(f"%gpuguard doctor takes only --json, not {args.value!r}")
            return _doctor(args.json, controls=getattr(self.shell, "kernel", None) is not None)
        if args.command == "forecast":
            if args.value is not None:
                raise UsageError(f"%gpuguard forecast takes only --json, not {args.value!r}")
            return self._forecast(args.json)
        if args.command == "retry":
            self._retry(args.value)
        elif args.command == "simulate":
            print(_telemetry_said(lambda: self._simulate(args.value)))
        elif args.command == "history":
            display(self._history(args.value))
        else:
            if args.value is not None:
                raise UsageError(f"%gpuguard status takes no value, not {args.value!r}")
            print(_telemetry_said(lambda: "\n".join(self.session.status_lines())))
        return None

    def _forecast(self, as_data: bool) -> dict[str, Any] | None:
        """The last guarded fit's forecast: printed, or as data (``None`` when there is none),
        with the execution count of its cell and whether that was the last guarded cell (a
        later one that ran no fit the guard saw keeps the forecast)."""
        from ..cards.forecast_words import kept_forecast_lines  # cards load with the first card

        kept, of_last_cell = self.session.forecast_now()
        if as_data:
            if kept is None or kept.forecast is None:
                return None
            return {
                **kept.forecast.as_data(),
                "execution_count": kept.execution_count,
                "of_last_guarded_cell": of_last_cell,
            }
        print("\n".join(kept_forecast_lines(kept, of_last_cell)))
        return None

    def guard_options(self, line: str, cell: str | None = None) -> GuardOptions:
        """The options of a ``%%gpuguard`` line, checked; ``UsageError`` says what is wrong.

        With the ``cell``, an automatic retry also needs a batch size the guard can change.
        """
        args = _parse(self.gpuguard_cell, line, "%%gpuguard")
        try:
            interval = None if args.interval is None else check_interval(args.interval)
            devices = None if args.devices is None else parse_device_list(args.devices)
            retry = retry_settings(
                args.auto_retry,
                args.find_max,
                args.margin,
                args.min_batch,
                args.batch_var,
                args.keep_effective_batch,
            )
            timeout = None if args.timeout is None else check_timeout(args.timeout)
            options = self.session.options(
                interval, devices, args.no_panel, retry, timeout, args.on_hang
            )
            self.session.check_devices(options)
        except ValueError as error:
            raise UsageError(f"%%gpuguard: {error}") from None
        if cell is not None and options.retry.retries_by_itself:
            reason = self.session.why_no_retry(cell, options)
            if reason is not None:
                raise UsageError(f"%%gpuguard --auto-retry: {reason}")
        return options

    def pre_run_cell(self, info: Any) -> None:
        """Start the guard when the cell about to run begins with ``%%gpuguard``."""
        self._depth += 1
        depth = self._depth
        line = guard_line(info.raw_cell)
        if line is None:
            if _GUARD_BELOW_A_MAGIC.search(info.raw_cell):
                print(
                    "ipy_gpuguard: %%gpuguard guards a cell only from its first line, above "
                    "other cell magics such as %%time: this cell runs unguarded",
                    file=sys.stderr,
                )
            return

        def start() -> None:
            checked, self.checked = self.checked, None
            try:
                options = checked[1] if checked and checked[0] == line else self.guard_options(line)
            except UsageError:
                return  # the transformer has refused the cell and IPython shows why
            assert self.shell is not None
            if self.session.guarding_outside(depth):
                magic = f"%%gpuguard {line.strip()}".strip()
                print(
                    f"ipy_gpuguard: this cell ({magic}) runs inside another guarded cell, whose "
                    "guard watches it: its own options do not apply and its failure gets no "
                    "card or retry; run it as a cell of its own to guard it",
                    file=sys.stderr,
                )
                return
            with held_interrupt() as interrupted:
                self.session.begin(
                    depth,
                    options,
                    info.raw_cell,
                    getattr(info, "cell_id", None),
                    _count_of_cell_starting(self.shell),
                )
            if interrupted.received:  # the person stopped the cell before it ran
                self.session.attempt_interrupted()
                self.session.end(depth)
                self.stopper.stop("the cell was interrupted as its guard started; it did not run")

        _guard_failure_in_one_line("start", start)

    def post_run_cell(self, result: Any) -> None:
        """Finish the guard of the cell that just ended; when it failed, show the diagnosis.

        A cell that a retry fixed by itself (``--auto-retry``) ends as a success: the frontend
        sees an ``ok`` reply, so "Run All" goes on; its first traceback stays shown above.
        """
        # By depth, not by the ExecutionInfo: ipykernel reports a cell whose traceback could not
        # be shown with another one than pre_run_cell saw, or with none. A blank cell has no
        # pre_run_cell.
        raw_cell = getattr(getattr(result, "info", None), "raw_cell", None)
        if raw_cell is not None and not raw_cell.strip():
            return
        depth, self._depth = self._depth, max(self._depth - 1, 0)
        if self._session is None:
            return  # no guarded cell has started
        raised = getattr(result, "error_in_exec", None)
        if raised is None:
            raised = _guard_failure_in_one_line(
                "finish", lambda: self._surface_pending_work(depth, result)
            )
        ended_with = type(raised).__name__ if raised is not None else None
        with held_interrupt() as interrupted:
            finished = _guard_failure_in_one_line(
                "finish", lambda: self.session.end(depth, ended_with)
            )
        stopped = interrupted.received
        if stopped and self.session.recording_attempt:
            self.session.attempt_interrupted()  # a retry's attempt: no further one runs
        elif stopped:
            print(
                "ipy_gpuguard: interrupted while the guard finished the cell; no retry or "
                "search runs by itself",
                file=sys.stderr,
            )
        not_run = _not_run(result)
        error = getattr(result, "error_in_exec", None) or not_run
        if finished is None:
            return
        if self.session.recording_attempt:
            # Held: freeing the attempt's memory runs garbage-collection callbacks (JAX's), in
            # which a Stop would be "ignored"; held, it ends the attempts after this one.
            with held_interrupt() as interrupted:
                _guard_failure_in_one_line(
                    "diagnose", lambda: self.session.record_attempt(finished, error)
                )
            if interrupted.received:
                self.session.attempt_interrupted()
            return
        if not_run is not None:  # stopped, or not even compiled: nothing ran to guard
            _guard_failure_in_one_line("finish", lambda: self.session.ended("error"))
            return
        count = getattr(result, "execution_count", None)
        stage = "search" if error is None else "diagnose"
        how = _guard_failure_in_one_line(
            stage, lambda: self.session.after(finished, error, count, stopped)
        )
        if how is None:  # the guard's own failure, said in a line: the cell's result stands
            outcome = "error" if error is not None else "ok"
            _guard_failure_in_one_line("finish", lambda: self.session.ended(outcome))
        elif how is Ending.FIXED:
            result.error_in_exec = None  # the last run of the guard's retries is the cell's
        elif how is Ending.STOPPED:
            # The person's Stop ended the guard's retries or search, or kept them from starting:
            # the cell ends interrupted, as it would have without the guard.
            result.error_in_exec = KeyboardInterrupt("the guard's retries of the cell")

    def _surface_pending_work(self, depth: int, result: Any) -> BaseException | None:
        """Fail the guarded cell at ``depth`` with the error of work it dispatched
        asynchronously, shown as the framework raised it (no frame of the guard's: the cell's
        lines had all returned)."""
        pending = self.session.pending_error(depth)
        if pending is not None:
            assert self.shell is not None
            print(SURFACED, file=sys.stderr)
            self.shell.showtraceback((type(pending), pending, None))
            result.error_in_exec = pending
        return pending

    def _retry(self, value: str | None) -> None:
        if value is not None and value != "max" and not (value.isdigit() and int(value) > 0):
            raise UsageError(f"%gpuguard retry takes a batch size like 32, or max, not {value!r}")
        # A size retries the last cell that ran out of memory; max searches from the last card
        # that can, which may be under a cell that fitted.
        card = self.session.last_search_card if value == "max" else self.session.last_retry_card
        if card is None:
            fitted = " or trained a Keras model" if value == "max" else ""
            raise UsageError(
                f"%gpuguard retry: no guarded cell has run out of memory{fitted} with a batch "
                "size the guard can change since the extension was loaded"
            )
        if value == "max":
            action = Action(FIND_MAX, card)
        else:
            action = Action(RETRY, card, ActionArgs(int(value) if value is not None else None))
        refusal = self.session.cards.refusal(action)
        if refusal is not None:
            raise UsageError(f"%gpuguard retry: {refusal}")
        result = self.session.act(action, around=_here)
        if self.session.live:  # the card above shows it too; a terminal's card printed it
            print(f"ipy_gpuguard · {result.message}")

    def _history(self, value: str | None) -> HistoryTable:
        count = 10 if value is None else _positive_count(value)
        log = self.session.incident_log
        if log is None:
            raise UsageError(
                "%gpuguard history: the incident log is off (%config GPUGuard.incident_log = '')"
            )
        try:
            recent = log.recent(count)
        except OSError as error:
            raise UsageError(
                f"%gpuguard history: cannot read the incident log {log.path} ({os_reason(error)})"
            ) from None
        return HistoryTable(recent, str(log.path))

    def _simulate(self, value: str | None) -> str:
        if value is None:
            raise UsageError("%gpuguard simulate needs sizes like 8GiB or 8GiB,16GiB, or off")
        try:
            return self.session.simulate("" if value.lower() == "off" else value)
        except ValueError as error:
            raise UsageError(f"%gpuguard simulate: {error}") from None


def _not_run(result: Any) -> BaseException | None:
    """What kept the cell from running (a syntax error; the person's Stop as its guard
    started, which then ends it as ``KeyboardInterrupt``, as a Stop during the cell would)."""
    error = getattr(result, "error_before_exec", None)
    if isinstance(error, CellStopped):
        result.error_before_exec = error = KeyboardInterrupt(str(error))
    return error if isinstance(error, BaseException) else None


def _count_of_cell_starting(shell: Any) -> int:
    """The execution count the frontend shows for the cell now starting (``In [5]``).

    IPython 9 advances ``execution_count`` before ``pre_run_cell`` (8 after the cell), so it is
    one ahead here; in both, the cell's input is stored just after ``pre_run_cell``, so the
    stored inputs (after the empty entry 0) are the cells before this one.
    """
    history = shell.history_manager
    return len(history.input_hist_raw) if history is not None else int(shell.execution_count)


def _here(run: Callable[[], RunOutcome]) -> RunOutcome:
    """Run a retry's attempt in the cell that asked for it (``%gpuguard retry``)."""
    return run()


class GuardedCellFailed(Exception):
    """A guarded cell run by ``run_cell_magic`` failed; its own traceback is already shown,
    so this one is a single line."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(
            f"the guarded cell failed with {type(error).__name__}: its traceback is above"
        )

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback."""
        return [f"{type(self).__name__}: {self}"]


class ShellRunner:
    """Runs a retry's cell as the shell runs any cell, without a new history entry."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell

    @property
    def namespace(self) -> Any:
        return self._shell.user_ns

    def run_cell(self, source: str, quiet: bool = False) -> None:
        """Run ``source``; ``quiet``: a failure shows no traceback (the guard reports each
        attempt in a line of its own, and the person's own traceback of the cell stands)."""
        with async_cells_runnable(self._shell):
            if not quiet:
                self._shell.run_cell(source, store_history=False)
                return
            self._shell.showtraceback = _no_traceback  # shadows the method, for this run only
            try:
                self._shell.run_cell(source, store_history=False)
            finally:
                del self._shell.showtraceback


def _no_traceback(*args: Any, **kwargs: Any) -> None:
    """``showtraceback`` of a quiet attempt."""


class GuardedCellTransformer:
    """Blanks a cell's ``%%gpuguard`` line so that the shell runs the rest as the cell itself.

    The line becomes an empty line, so line numbers in tracebacks are those of the cell as shown.
    When another cell magic follows, the line is removed instead, so that it stays first.
    """

    #: Keeps IPython's completeness check treating ``%%gpuguard`` as a cell magic (a terminal
    #: then waits for a blank line), since transforms with side effects are skipped there.
    has_side_effects = True

    def __init__(self, magics: GPUGuardMagics) -> None:
        self._magics = magics

    def __call__(self, lines: list[str]) -> list[str]:
        line = guard_line(lines[0]) if lines else None
        if line is None:
            return lines
        # Checking the options opens the session (imports, the telemetry): a Stop landing in it
        # would leave IPython's run_cell by a KeyboardInterrupt that ipykernel drops with the
        # request, never replying. It is held, and stops the cell before it runs.
        with held_interrupt() as interrupted:
            try:
                self._magics.checked = (line, self._magics.guard_options(line, "".join(lines)))
            except UsageError:
                raise  # a wrong option stops the cell before it runs
            except Exception:
                pass  # the guard's own failure must not stop the cell: starting it reports it
        if interrupted.received:
            self._magics.stopper.stop(
                "the cell was interrupted as its guard started; it did not run"
            )
        body = lines[1:]
        if body and body[0].startswith("%%"):
            return body
        return ["\n", *body]


def guard_line(cell: str) -> str | None:
    """The options after ``%%gpuguard`` on the cell's first non-blank line; ``None`` if not guarded."""
    first = next((line for line in cell.splitlines() if line.strip()), "")
    match = _GUARD_LINE.match(first)
    return None if match is None else (match.group("options") or "")


def _doctor(as_json: bool, controls: bool) -> dict[str, Any] | None:
    """Check the environment, saying what takes time on a line the report then replaces;
    with ``controls`` (a Jupyter kernel), a filter and "Check again" under it."""
    from ..doctor import run_doctor
    from ..doctor.render import report_data, summary_text
    from ..doctor.widget import DoctorControls, DoctorReport

    progress = display(Pretty("Checking the GPU environment…"), display_id=True)

    def announce(message: str) -> None:
        progress.update(Pretty(message))

    report = run_doctor(announce=announce)
    if as_json:
        announce(summary_text(report))
        return report_data(report)
    progress.update(DoctorReport(report))
    if controls:
        display(DoctorControls(report, lambda again: run_doctor(announce=again), progress.update))
    return None


def _telemetry_said(read: Callable[[], str]) -> str:
    """What a command that reads the telemetry says; a failing backend is one line of it."""
    try:
        return read()
    except (OSError, RuntimeError) as error:
        return f"ipy_gpuguard: the telemetry could not be read ({type(error).__name__}: {error})"


def _positive_count(value: str) -> int:
    if not value.isdigit() or int(value) == 0:
        raise UsageError(f"%gpuguard history takes a number of incidents like 20, not {value!r}")
    return int(value)


def _parse(magic: Any, line: str, name: str) -> Any:
    try:
        return magic_arguments.parse_argstring(magic, line)
    except UsageError as error:
        raise UsageError(f"{name}: {error} (see {name}? for the options)") from None


_CONSEQUENCES = {
    "start": "the cell runs unguarded",
    "search": "the cell's own result stands",
    "finish": "the cell's own result stands",
    "diagnose": "the traceback above is the cell's own",
}


def _guard_failure_in_one_line(stage: str, action: Callable[[], T], stop: bool = False) -> T | None:
    """Run a step of the guard; its failure, or the person's Stop landing in it, is one line
    on stderr, never a second traceback."""
    try:
        return action()
    except KeyboardInterrupt:
        print(
            f"ipy_gpuguard: interrupted while the guard was to {stage}; {_CONSEQUENCES[stage]}",
            file=sys.stderr,
        )
        return None
    except BaseException as error:  # a SystemExit too: a hook of IPython's must not end the kernel
        from ..record import in_one_line  # not at %load_ext: the session's rooms load with it

        print(
            f"ipy_gpuguard: the guard failed to {stage} ({in_one_line(error)}); "
            f"{_CONSEQUENCES[stage]}",
            file=sys.stderr,
        )
        return None
