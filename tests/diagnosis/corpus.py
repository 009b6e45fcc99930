"""The corpus of real error texts, its fixed split, and the per-family table of how it reads.

Each case is ``tests/data/errors/<expected rule>/<variant>.txt`` with a sidecar
``<variant>.json`` naming where the text comes from (a public issue thread, or the framework
file that prints the message), the framework, the year and the family of the report. The
directory's prefix is the kind a reader would give it; ``unknown/`` holds the negative controls.

A third of the cases is held out: drawn by a hash of the case's path (``sha256(path)[0] % 3 == 0``)
before any rule was tuned on the rest, and written into each sidecar (``"split"``) so that moving a
case to another rule's directory never moves it to the other split. The fourth round (families
``round4-*``) was drawn by ``sha256("<family>/<variant>")[0] % 3 == 0`` when its collectors filed it.

Each sidecar also names the GPU's vendor (``"vendor"``: ``nvidia``, ``amd``, ``apple``,
``directml``, or ``none``): read from the text's own words for the first three rounds, from the
report's thread for the fourth. With ``framework`` it is the stack the case's card keeps to.

``python -m tests.diagnosis.corpus`` prints the tables of the closing note: each split, and each
family with the rule that fired on every case it got wrong (held-out cases show only counts).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ipy_gpuguard.diagnosis import RULES, Context, Diagnosis, Kind, diagnose

CORPUS = Path(__file__).parent.parent / "data" / "errors"
AFTER_WATCHDOG = {rule.id for rule in RULES if rule.after_watchdog_interrupt}


@dataclass(frozen=True)
class Case:
    path: Path

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"

    @property
    def expected_rule(self) -> str:
        return self.path.parent.name

    @property
    def expected_kind(self) -> Kind:
        return Kind(self.expected_rule.split(".")[0])

    @cached_property
    def text(self) -> str:
        return self.path.read_text()

    @cached_property
    def sidecar(self) -> dict:
        return json.loads(self.path.with_suffix(".json").read_text())

    @property
    def held_out(self) -> bool:
        return self.sidecar["split"] == "held-out"

    @property
    def round_four(self) -> bool:
        """Gathered for issue 36, after the bars of the first three rounds were set."""
        return self.sidecar["family"].startswith("round4-")

    def diagnose(self) -> Diagnosis:
        watchdog = self.expected_rule in AFTER_WATCHDOG
        return diagnose(self.text, Context(watchdog_interrupted=watchdog))


CASES = tuple(Case(path) for path in sorted(CORPUS.glob("*/*.txt")))
DEVELOPMENT = tuple(case for case in CASES if not case.held_out)
HELD_OUT = tuple(case for case in CASES if case.held_out)


@dataclass(frozen=True)
class Score:
    """How one split reads: correct kind, out-of-memory recall, false alarms."""

    cases: int
    correct_kind: int
    oom_cases: int
    oom_found: int
    others_called_oom: int
    non_gpu_cases: int
    non_gpu_called_gpu: int
    wrong: tuple[tuple[Case, Diagnosis], ...]

    @property
    def accuracy(self) -> float:
        return self.correct_kind / self.cases

    @property
    def oom_recall(self) -> float:
        return self.oom_found / self.oom_cases

    @property
    def false_oom_rate(self) -> float:
        return self.others_called_oom / (self.cases - self.oom_cases)


def score(cases: tuple[Case, ...]) -> Score:
    results = [(case, case.diagnose()) for case in cases]
    oom = [(case, found) for case, found in results if case.expected_kind is Kind.OUT_OF_MEMORY]
    others = [
        (case, found) for case, found in results if case.expected_kind is not Kind.OUT_OF_MEMORY
    ]
    non_gpu = [(case, found) for case, found in results if not case.expected_kind.is_gpu_failure]
    return Score(
        cases=len(results),
        correct_kind=sum(found.kind is case.expected_kind for case, found in results),
        oom_cases=len(oom),
        oom_found=sum(found.kind is Kind.OUT_OF_MEMORY for _, found in oom),
        others_called_oom=sum(found.kind is Kind.OUT_OF_MEMORY for _, found in others),
        non_gpu_cases=len(non_gpu),
        non_gpu_called_gpu=sum(found.is_gpu_failure for _, found in non_gpu),
        wrong=tuple(
            (case, found) for case, found in results if found.kind is not case.expected_kind
        ),
    )


def _split_line(name: str, split: Score) -> str:
    return (
        f"| {name} | {split.cases} | {split.correct_kind} ({split.accuracy:.1%}) | "
        f"{split.oom_found}/{split.oom_cases} ({split.oom_recall:.1%}) | "
        f"{split.others_called_oom} ({split.false_oom_rate:.1%}) | "
        f"{split.non_gpu_called_gpu}/{split.non_gpu_cases} |"
    )


def main() -> None:
    development, held_out = score(DEVELOPMENT), score(HELD_OUT)
    print("| split | cases | correct kind | OOM found | others called OOM | non-GPU called GPU |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(_split_line("development", development))
    print(_split_line("held out", held_out))
    print()
    families: dict[str, list[tuple[Case, bool]]] = defaultdict(list)
    wrong = {case.name: found for case, found in (*development.wrong, *held_out.wrong)}
    for case in CASES:
        families[case.sidecar["family"]].append((case, case.name not in wrong))
    print("| family | cases | correct | wrong (rule that fired) |")
    print("| --- | --- | --- | --- |")
    for family, members in sorted(families.items()):
        misses = [
            f"{case.name} → {wrong[case.name].rule_id}" if not case.held_out else "(held out)"
            for case, right in members
            if not right
        ]
        correct = sum(right for _, right in members)
        print(f"| {family} | {len(members)} | {correct} | {'; '.join(misses) or '—'} |")
    timings = []
    for case in CASES:
        start = time.perf_counter()
        case.diagnose()
        timings.append(time.perf_counter() - start)
    print(f"\nslowest case: {max(timings) * 1000:.1f} ms; all {len(CASES)}: {sum(timings):.2f} s")


if __name__ == "__main__":
    main()
