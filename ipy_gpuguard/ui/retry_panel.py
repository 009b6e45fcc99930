"""The retry part of the out-of-memory card as widgets: the buttons, the attempts, their output.

A click arrives once the failed cell has returned (the kernel is idle), so an attempt runs the
cell on the main thread, inside this panel's ``Output``: its panel, its printout and, when it
fails, its traceback show in the card. Only the last attempt's output is kept.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from ..retry import Attempt, CellRetry, RetryOffer, RunOutcome, attempt_line, peak_text
from ..retry_text import outcome_lines
from . import retry_render

#: Attempts one click on "Find the largest batch that fits" may use.
FIND_MAX_RUNS = 12


class RetryPanel:
    """Buttons that retry a failed cell with smaller batches, and what the attempts did.

    Parameters
    ----------
    retry
        The retries of this cell; ``None`` when none is possible (``offer.reason`` says why).
    free_memory
        Frees what the failed cell pinned, before the first attempt.
    """

    def __init__(
        self,
        retry: CellRetry | None,
        offer: RetryOffer,
        free_memory: Callable[[], object],
    ) -> None:
        import ipywidgets as widgets

        self.retry = retry
        self.offer = offer
        self._free_memory: Callable[[], object] | None = free_memory
        self.lines: list[str] = []
        self.output = widgets.Output()
        self.retry_button = widgets.Button(
            description=_retry_label(offer.size), button_style="primary", icon="redo"
        )
        self.find_max_button = widgets.Button(description="Find the largest batch that fits")
        self.retry_button.on_click(lambda _button: self.retry_once())
        self.find_max_button.on_click(lambda _button: self.find_max())
        self.status = widgets.HTML(
            retry_render.offer_html(offer) + f"<div>{escape(retry_render.RERUN_NOTE)}</div>"
        )
        self.widget = widgets.VBox([self.status, self.output])
        self.buttons = [self.retry_button, self.find_max_button]
        self._set_buttons(disabled=False)

    def retry_once(self) -> Attempt | None:
        """The primary button: one attempt at the suggested size."""
        if self.retry is None:
            return None
        step = self.retry.suggestion()
        if step is None:
            return None
        self._before_first_attempt()
        attempt = self.retry.attempt(step.size, self._in_output)
        self._report(attempt)
        self._after(attempt)
        return attempt

    def find_max(self, runs: int = FIND_MAX_RUNS) -> Attempt | None:
        """The second button: search by itself for the largest size that fits."""
        return self.auto(runs, find_max=True)

    def auto(self, runs: int, find_max: bool) -> Attempt | None:
        """Attempt by itself (``--auto-retry``, or the second button); returns the last one."""
        if self.retry is None:
            return None
        self._before_first_attempt()
        last = self.retry.auto(runs, find_max, self._report, self._in_output)
        if last is not None:
            self._after(last)
        return last

    def _before_first_attempt(self) -> None:
        if self._free_memory is not None:
            self._free_memory()
            self._free_memory = None
        self._set_buttons(disabled=True)

    def _report(self, attempt: Attempt) -> None:
        assert self.retry is not None
        self.lines.append(attempt_line(attempt, self.retry.setup.capacity_bytes))
        self._show(retry_render.attempts_html(self.lines))

    def _after(self, last: Attempt) -> None:
        """The card after the attempts: fixed, the next size, a restart, or why it stopped."""
        assert self.retry is not None
        best = self.retry.search.largest_fitting
        if last.fits and last.size == best:
            peak = peak_text(last.outcome.peak_bytes, self.retry.setup.capacity_bytes)
            fixed = retry_render.fixed_html(
                f"batch size {last.size} fits{peak}",
                last.change_lines(),
                self.retry.setup.memory is not None,
            )
            self._show(retry_render.attempts_html(self.lines, fixed))
            self.retry_button.layout.display = "none"
            self.find_max_button.disabled = False
            return
        held = self.retry.memory_held(last)
        step = self.retry.suggestion()
        final = "".join(f"<div>{escape(line)}</div>" for line in outcome_lines(self.retry, last))
        self._show(retry_render.attempts_html(self.lines, final))
        self._set_buttons(disabled=False)
        self.retry_button.disabled = step is None or held is not None
        self.retry_button.description = _retry_label(step.size if step is not None else None)

    def _set_buttons(self, disabled: bool) -> None:
        for button in self.buttons:
            button.disabled = disabled or self.retry is None

    def _show(self, html: str) -> None:
        self.status.value = html

    def _in_output(self, run: Callable[[], RunOutcome]) -> RunOutcome:
        """Run an attempt with its output in the card, in place of the previous attempt's."""
        self.output.clear_output()
        with self.output:
            return run()


def _retry_label(size: int | None) -> str:
    return f"Retry with batch size {size}" if size is not None else "Retry"
