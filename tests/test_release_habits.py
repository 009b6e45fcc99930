"""The habits of a Jupyter package: the pre-commit hooks run what ``make lint`` runs, and the
changelog has a section for the version being made."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def lint_commands() -> list[str]:
    """The commands of the Makefile's ``lint`` target, with the venv's prefix taken off."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    return [line.strip().replace("$(VENV)/bin/", "") for line in recipe.group(1).splitlines()]


def hook_entries() -> list[str]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    return [hook["entry"].replace(".venv/bin/", "") for hook in hooks]


def test_the_pre_commit_hooks_run_the_tools_of_make_lint():
    entries = " ".join(hook_entries())
    for command in lint_commands():
        tool = " ".join(
            word
            for word in command.split()
            if not re.match(r"^(ipy_gpuguard|tests|bench|notebooks)$", word)
        )
        tool = tool.removeprefix("cd labextension && ")
        assert tool in entries, (tool, entries)


def test_the_changelog_has_a_section_for_the_version():
    version = json.loads((ROOT / "labextension" / "package.json").read_text())["version"]
    sections = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert version in sections
