"""The house drawn from the code: its rooms, and which way the imports between them go."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import ipy_gpuguard

PACKAGE = Path(ipy_gpuguard.__file__).parent
#: The only modules at the top of the package; everything else lives in a room.
TOP_LEVEL = {"__init__", "__main__", "_version", "cli"}
ROOMS = {
    "shell",
    "cards",
    "record",
    "retry",
    "protocol",
    "telemetry",
    "watchdog",
    "diagnosis",
    "ui",
    "doctor",
    "server",
}
#: Rooms that import neither IPython nor widgets, and nothing of shell/ or ui/.
PURE = {"protocol", "telemetry", "watchdog", "diagnosis", "retry", "cards", "record"}
#: Frameworks never imported to look at them (``sys.modules.get`` does).
FRAMEWORKS = {"tensorflow", "keras", "torch", "jax", "pynvml"}


def room_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def imported_rooms(path: Path) -> set[str]:
    """The package's rooms a module imports, at any depth of its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(PACKAGE).parent.parts
    rooms = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(here[: len(here) - node.level + 1])
            target = [*base, *(node.module.split(".") if node.module else [])]
            names = target or [alias.name for alias in node.names]
            rooms.add(names[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ipy_gpuguard."):
            rooms.add(node.module.split(".")[1])
    return rooms


def third_party(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules.add(node.module.split(".")[0])
    return modules


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        room = room_of(path)
        edges.setdefault(room, set()).update(imported_rooms(path) - {room})
    return edges


def test_the_top_level_holds_only_the_entry_points_and_the_rooms():
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert modules == TOP_LEVEL
    assert packages == ROOMS


def test_every_room_says_what_it_exports():
    for room in ROOMS:
        # A room imported lazily lists its names in the stub that type checkers read.
        stub = PACKAGE / room / "__init__.pyi"
        init = stub if stub.exists() else PACKAGE / room / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        names = [
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        ]
        assert "__all__" in names, room


def test_no_pure_room_imports_shell_ui_ipython_or_widgets():
    edges = graph()
    for room in PURE:
        assert not edges[room] & {"shell", "ui"}, room
        for path in (PACKAGE / room).rglob("*.py"):
            assert not third_party(path) & {"IPython", "ipywidgets", "ipykernel"}, path


def test_only_the_shell_touches_ipython():
    for path in PACKAGE.rglob("*.py"):
        if room_of(path) != "shell":
            assert not third_party(path) & {"IPython", "ipykernel"}, path


def test_the_protocol_imports_no_other_room():
    assert graph()["protocol"] == set()


def test_the_rooms_form_no_circle():
    edges = {room: targets & ROOMS for room, targets in graph().items() if room in ROOMS}
    visiting, done = set(), set()

    def visit(room, path):
        assert room not in visiting, " -> ".join([*path, room])
        if room in done:
            return
        visiting.add(room)
        for target in sorted(edges.get(room, ())):
            visit(target, [*path, room])
        visiting.discard(room)
        done.add(room)

    for room in sorted(edges):
        visit(room, [])


def test_cards_import_no_ipython_widgets_or_framework():
    for path in (PACKAGE / "cards").rglob("*.py"):
        assert not third_party(path) & {"IPython", "ipywidgets", "ipykernel", *FRAMEWORKS}, path


def test_ui_holds_no_decision_it_imports_nothing_of_the_diagnosis():
    """What a card or panel says is decided in ``cards/`` (and ``diagnosis/``): ``ui/`` draws."""
    for path in (PACKAGE / "ui").rglob("*.py"):
        assert "diagnosis" not in imported_rooms(path), path


def test_pynvml_is_imported_only_in_telemetry():
    for path in PACKAGE.rglob("*.py"):
        if room_of(path) != "telemetry":
            assert "pynvml" not in third_party(path), path


def test_the_state_files_path_is_spelled_only_in_the_protocol():
    spelled = re.compile(r"""kernel-\{|/ ["']ipy_gpuguard["']""")
    for path in PACKAGE.rglob("*.py"):
        if room_of(path) != "protocol":
            assert not spelled.search(path.read_text(encoding="utf-8")), path


def _shell_sources() -> list[tuple[Path, ast.AST]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted((PACKAGE / "shell").rglob("*.py"))
    ]


#: The names a decision about a cell's aftermath reads: a diagnosis' kind, a verdict's states.
_DECIDING_NAMES = {"FIXED", "NEXT", "MEMORY_HELD", "GAVE_UP", "OTHER_ERROR", "STOPPED", "Kind"}
_VERDICT_STATES = {"fixed", "next", "memory_held", "gave_up", "other_error", "stopped"}
#: Attributes whose testing is a decision: how many retries run by themselves, whether an
#: attempt was interrupted, whether a whole run's fits all ended.
_DECIDING_ATTRIBUTES = {"auto_runs", "interrupted", "all_ended"}


def test_the_shell_holds_no_decision_of_what_follows_a_cell():
    """``retry/aftermath.py`` decides what follows a cell (a card, freeing, a retry or a
    search by itself, how the cell ends) and ``retry/verdict.py`` whether it is fixed; ``shell/``
    only carries that out. So no module of ``shell/`` compares a diagnosis' kind or a
    verdict's state, nor tests the settings or the attempts that decide what follows."""
    for path, tree in _shell_sources():
        for node in ast.walk(tree):
            where = (path.name, getattr(node, "lineno", None))
            if isinstance(node, ast.Compare | ast.BoolOp | ast.IfExp | ast.If | ast.UnaryOp):
                tested = node.test if isinstance(node, ast.If | ast.IfExp) else node
                for part in ast.walk(tested):
                    if isinstance(part, ast.Attribute):
                        assert part.attr not in _DECIDING_ATTRIBUTES, where
                    if isinstance(part, ast.Constant):
                        assert part.value not in _VERDICT_STATES, where
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert node.value.id != "Kind", where
            if isinstance(node, ast.ImportFrom):
                named = {alias.name for alias in node.names}
                assert not named & (_DECIDING_NAMES - {"Kind"}), where


def test_nvml_is_started_only_in_telemetry():
    """One NVML context per process, opened where the telemetry lives (nvitop's habit): the
    doctor, the watchdog's GPU-timeout probe and the server read it through ``telemetry/``."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        started = any(
            isinstance(node, ast.Attribute) and node.attr in ("nvmlInit", "nvmlInitWithFlags")
            for node in ast.walk(tree)
        )
        assert not started or room_of(path) == "telemetry", path


#: The rooms where a sentence the person reads on a card may be written: the card's own room,
#: and the catalog of diagnoses and remedies the cards and the doctor share.
_WORDING_ROOMS = {"cards", "diagnosis"}


def _sentences(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants that read as a sentence of prose: a capital, words, a full stop."""
    documentation = {  # a setting's help is its documentation, not a card's words
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "help"
        for part in ast.walk(keyword.value)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in documentation:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if re.fullmatch(r"[A-Z][a-z]+ [^\n]*\w[^\n]*[.:]\s*", text) and text.count(" ") >= 3:
            found.append((node.lineno, text))
    return found


def _docstring_lines(tree: ast.AST) -> set[int]:
    return {
        node.body[0].value.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def test_card_sentences_are_written_only_in_cards():
    """Every sentence a card shows comes from ``cards/`` (or the diagnosis' catalog): the
    retry, the search, the watchdog and the shell hand over facts and codes, never words."""
    for room in ("retry", "shell", "watchdog", "record"):
        for path in (PACKAGE / room).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = _docstring_lines(tree)
            prose = [(line, text) for line, text in _sentences(tree) if line not in docstrings]
            assert not prose, (path.relative_to(PACKAGE), prose)
