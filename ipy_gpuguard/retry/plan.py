"""From a cell that ran out of memory to the retry its card offers, or the reason it offers none;
from a cell that fitted to the search for its largest batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..diagnosis import Diagnosis
from ..protocol import RetryOffer, RetryTarget
from ..record.forecast import Forecast
from .attempts import CellRetry, RetrySetup, Runners
from .find import find_batch_size
from .frames import CellFrame
from .memory import BatchMemory, cell_key
from .probe import FitWatch
from .reruns import rerun_statements
from .resolve import BatchTarget
from .rewrite import without_batch_size
from .search import Trial
from .settings import RetrySettings
from .source import CellSource


@dataclass(frozen=True)
class RetryRequest:
    """The retries the session could set up for an out-of-memory failure.

    ``retry`` is ``None`` when none is possible (``offer.reason`` says why); ``settings`` say
    how many attempts to make by themselves (``--auto-retry``), 0 to wait to be asked.
    """

    retry: CellRetry | None
    offer: RetryOffer
    settings: RetrySettings = field(default_factory=RetrySettings)
    search_only: bool = False  # a search from a cell that fitted: nothing smaller to offer


def plan_retry(
    cell: str,
    settings: RetrySettings,
    diagnosis: Diagnosis,
    failing: Sequence[CellFrame],
    namespace: Mapping[str, Any],
    device_bytes: tuple[int, ...],
    baseline_bytes: int | None,
    memory: BatchMemory | None,
    runners: Runners,
    replicas: int = 1,
    watch: FitWatch | None = None,
    forecast: Forecast | None = None,
    capacity_bytes: int | None = None,
) -> RetryRequest:
    """The retries of ``cell``: its batch size, the first size to try, what the card says.

    Parameters
    ----------
    failing
        The cell's frames as it failed, outermost first (:func:`.frames.cell_frames`).
    device_bytes
        Memory of each watched device: the device part of the remembered sizes' key.
    baseline_bytes
        The allocator's bytes before the cell: what memory must come back to between attempts.
    replicas
        The replicas a ``tf.distribute`` strategy split the failed ``fit``'s batch across.
    watch
        What the failed run showed of its ``fit`` calls: the one a search measures sizes with.
    forecast
        What the guard foresaw of the failed fit: its largest batch is the first size tried,
        where it foresaw one below the cell's (it errs small, so the retry does not fail again).
    capacity_bytes
        What the framework's allocator may take of the smallest device, which the search aims
        under: less than the device where the allocator is held to less (JAX's pool); the
        smallest of ``device_bytes`` where not given.
    """
    fit_fraction = diagnosis.facts.get("fit_fraction")
    fraction = fit_fraction if isinstance(fit_fraction, float) else None
    request = _request(
        cell,
        settings,
        failing,
        namespace,
        lambda size: Trial(size, False, fit_fraction=fraction, foreseen=_foreseen(forecast, size)),
        device_bytes,
        baseline_bytes,
        memory,
        runners,
        replicas,
        watch,
        capacity_bytes,
    )
    retry = request.retry
    if retry is None:
        return request
    current = retry.setup.current_size
    step = retry.suggestion()
    if step is None:
        reason = (
            f"the batch size is {current}, already at the floor (--min-batch {settings.min_batch})"
        )
        return RetryRequest(None, _no_offer(reason, current))
    offer = replace(
        request.offer,
        batch_size=step.size,
        notes=(),  # cards/ words what the setup says (replicas, a remembered size, ...)
        reruns=rerun_statements(cell, failing[0].line if failing else None),
    )
    return RetryRequest(retry, offer, settings)


def _foreseen(forecast: Forecast | None, size: int) -> int | None:
    """The forecast's largest batch, for a failed run at ``size`` that it forecast."""
    if forecast is None or forecast.batch_size != size:
        return None
    return forecast.largest_batch or None


def plan_search(
    cell: str,
    settings: RetrySettings,
    namespace: Mapping[str, Any],
    fitted: FitWatch,
    peak_bytes: int | None,
    device_bytes: tuple[int, ...],
    baseline_bytes: int | None,
    memory: BatchMemory | None,
    runners: Runners,
    capacity_bytes: int | None = None,
) -> RetryRequest:
    """A search for the largest batch of ``cell``, whose whole run fitted with the allocator
    peaking at ``peak_bytes``, as ``fitted`` watched it (the rest as :func:`plan_retry`)."""
    request = _request(
        cell,
        settings,
        (),
        namespace,
        lambda size: Trial(size, True, peak_bytes, all_data=fitted.one_batch),
        device_bytes,
        baseline_bytes,
        memory,
        runners,
        fitted.replicas,
        fitted,
        capacity_bytes,
    )
    return replace(request, search_only=True)


def _request(
    cell: str,
    settings: RetrySettings,
    frames: Sequence[CellFrame],
    namespace: Mapping[str, Any],
    first_trial: Callable[[int], Trial],
    device_bytes: tuple[int, ...],
    baseline_bytes: int | None,
    memory: BatchMemory | None,
    runners: Runners,
    replicas: int,
    watch: FitWatch | None,
    capacity_bytes: int | None,
) -> RetryRequest:
    """The cell's batch size and the retry that changes it, or why there is none."""
    finding = find_batch_size(cell, settings.batch_var, frames)
    target = finding.target
    if target is None:
        choices = tuple(choice.name or "" for choice in finding.choices)
        return RetryRequest(None, _no_offer(finding.reason, choices=choices))
    current = (
        target.literal.value if target.literal is not None else namespace.get(target.name or "")
    )
    if type(current) is not int or current < 1:
        reason = (
            f"{target.name} in the namespace is {current!r}, not a batch size: set it to a number, "
            "or name another variable with %%gpuguard --batch-var NAME"
        )
        return RetryRequest(None, _no_offer(reason))
    key = cell_key(without_batch_size(cell, finding), device_bytes)
    remembered = memory.recall(key) if memory is not None else None
    before = {id(value) for value in namespace.values()}
    setup = RetrySetup(
        cell=cell,
        finding=finding,
        current_size=current,
        first_trial=first_trial(current),
        capacity_bytes=capacity_bytes or (min(device_bytes) if device_bytes else None),
        baseline_bytes=baseline_bytes,
        min_batch=settings.min_batch,
        margin=settings.margin,
        keep_effective_batch=settings.keep_effective_batch,
        remembered=remembered,
        memory=memory,
        memory_key=key,
        replicas=replicas,
        defined_before=lambda value: id(value) in before,
        fit_call=watch.measurable if watch is not None else None,
        before=watch.before if watch is not None else None,
    )
    retry = CellRetry(setup, runners, find_max=settings.find_max)
    if watch is not None and watch.measurable is None:
        retry.by_whole_runs(watch.why_not_measured)
    offer = RetryOffer(
        batch_size=None,
        current_batch_size=current,
        target=_target(cell, target),
        reason="",
        choices=(),
        notes=(),
        reruns=rerun_statements(cell, None),
    )
    return RetryRequest(retry, offer, settings)


def remembered_note(
    cell: str, batch_var: str | None, device_bytes: tuple[int, ...], memory: BatchMemory
) -> str | None:
    """The panel's note when a size that fitted this cell on this device is remembered."""
    finding = find_batch_size(cell, batch_var)
    if finding.target is None:
        return None
    remembered = memory.recall(cell_key(without_batch_size(cell, finding), device_bytes))
    if remembered is None:
        return None
    return (
        f"batch size {remembered.batch_size} fitted this cell on this device before: a retry "
        "starts there"
    )


def _no_offer(reason: str, current: int | None = None, choices: tuple[str, ...] = ()) -> RetryOffer:
    return RetryOffer(None, current, None, reason, choices, (), ())


def _target(cell: str, target: BatchTarget) -> RetryTarget:
    literal = target.literal
    if literal is None:
        return RetryTarget(target.name, target.use, None, None, in_namespace=True)
    line_text = CellSource(cell).line_text(literal.line).strip()
    return RetryTarget(target.name, target.use, literal.line, line_text, in_namespace=False)
