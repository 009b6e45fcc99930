"""What one whole run of a cell showed of its Keras ``fit`` calls, for a search.

The Keras heartbeat (:mod:`ipy_gpuguard.watchdog.keras_hooks`) tells a :class:`FitWatch` when
each ``fit`` begins, with its arguments, and when it ends. The watch never ends a run: it
notes the one ``fit`` a search can measure with the guard's own calls (:mod:`.measure`), or why
there is none; whether every ``fit`` ran to its end (a ``fit`` whose error the cell caught, in a
bare ``except`` or under ``%%capture``, did not fit, though the cell raised nothing); and, for a
search, the state of each model of an earlier cell as its first ``fit`` began: what the search
puts back before each of its whole runs, so that the model is trained by the last one alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .measure import FitCall
from .notes import NoteKind, SearchNote, WhyWholeRuns
from .own_attributes import defines, replicas_of
from .state import KeptState


def is_one_shot(data: Any) -> bool:
    """Whether ``data`` is used up by reading it (a generator, an iterator), so that what a
    run draws from it is gone; a dataset, a ``PyDataset`` or an array is read afresh by each
    ``fit``. Asked of its class's own dictionaries, as Python finds ``__next__``: neither a
    ``__class__`` of the person's nor a ``__subclasshook__`` of their ``Iterator`` subclasses
    (which ``isinstance(data, Iterator)`` runs) answers."""
    kind = type(data)
    return defines(kind, "__next__") and defines(kind, "__iter__")


@dataclass
class BeforeTheSearch:
    """The state of each model of an earlier cell as the search's first ``fit`` of it began:
    what puts it back as it was before the cell."""

    kept: dict[int, tuple[Any, KeptState]] = field(default_factory=dict)

    def keep(self, model: Any) -> None:
        if id(model) not in self.kept:
            self.kept[id(model)] = (model, KeptState.of([model]))

    def restore(self) -> None:
        for _, state in self.kept.values():
            state.restore()


@dataclass
class FitWatch:
    """What the ``fit`` calls of one whole run showed.

    ``defined_before`` tells the objects the namespace held before the search (a model of an
    earlier cell, a generator whose consumption outlives the run); ``before`` keeps their state
    at their first ``fit`` when a search may need to put them back.
    """

    defined_before: Callable[[object], bool] = lambda value: False
    before: BeforeTheSearch | None = None
    began: int = 0
    ended: int = 0
    #: The first ``fit``, when its data can be re-batched.
    call: FitCall | None = None
    #: The type of the first ``fit``'s data, when it batches itself.
    own_batches: str | None = None
    consumed_input: str | None = None  # the type of a one-shot input of an earlier cell
    trained_earlier_model: bool = False
    one_batch: bool = False  # a fit's epoch was one batch: the batch holds all the data
    replicas: int = 1  # the most a fit's tf.distribute strategy split its batch across

    @property
    def saw_fit(self) -> bool:
        return self.began > 0

    @property
    def all_ended(self) -> bool:
        """Every ``fit`` that began ran to its end (none was cut by an error the cell caught)."""
        return self.ended >= self.began

    def fit_began(self, model: Any, arguments: Mapping[str, Any], epoch_steps: int | None) -> None:
        self.began += 1
        self.one_batch = self.one_batch or epoch_steps == 1
        self.replicas = max(self.replicas, replicas_of(model))
        earlier = self.defined_before(model)
        self.trained_earlier_model = self.trained_earlier_model or earlier
        if earlier and self.before is not None:
            self.before.keep(model)
        fit_input = arguments.get("x")
        if is_one_shot(fit_input) and self.defined_before(fit_input):
            self.consumed_input = type(fit_input).__name__
        if self.began == 1:
            self.call = FitCall.of(model, arguments)
            if self.call is None:
                self.own_batches = type(fit_input).__name__

    def fit_ended(self, model: Any) -> None:
        self.ended += 1

    def step_ended(self, model: Any, step: int) -> None:
        """A search needs nothing of a step's end."""

    def epoch_ended(self, model: Any, epoch: int) -> None:
        """A search needs nothing of an epoch's end."""

    @property
    def measurable(self) -> FitCall | None:
        """The one ``fit`` whose sizes the guard's own calls can measure, if there is one."""
        return self.call if self.began == 1 else None

    @property
    def why_not_measured(self) -> SearchNote:
        """Why the sizes of this run's training cannot be measured by the guard's own calls."""
        if not self.saw_fit:
            return SearchNote(NoteKind.WHOLE_RUNS, WhyWholeRuns.NO_FIT)
        if self.began > 1:
            return SearchNote(NoteKind.WHOLE_RUNS, WhyWholeRuns.SEVERAL_FITS, str(self.began))
        return SearchNote(NoteKind.WHOLE_RUNS, WhyWholeRuns.OWN_BATCHES, self.own_batches or "")
