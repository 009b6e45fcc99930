"""What a retry runs again, named before the first one (issue 14, 12)."""

from __future__ import annotations

from ipy_gpuguard.cards.offers import retry_state
from ipy_gpuguard.cards.words import offer_lines
from ipy_gpuguard.diagnosis import Context, diagnose
from ipy_gpuguard.protocol import to_json
from ipy_gpuguard.retry import CellFrame, RetrySettings, plan_retry
from ipy_gpuguard.retry.reruns import rerun_statements

CELL = (
    "%%gpuguard --auto-retry\n"
    "results.append(len(results))\n"
    "log = open('runs.txt', 'a')\n"
    "log.write('started\\n')\n"
    "print('training')\n"
    "counter += 1\n"
    "model.fit(x, y, batch_size=256)\n"
    "log.write('done\\n')\n"
)


def test_the_statements_before_the_failing_line_that_act_are_named():
    assert rerun_statements(CELL, failing_line=7) == (
        "line 2: results.append(len(results))",
        "line 4: log.write('started\\n')",
        "line 6: counter += 1",
    )


def test_every_renderer_names_them_in_the_offer():
    diagnosis = diagnose("OOM when allocating tensor with shape[256,1024]", Context())
    request = plan_retry(
        CELL, RetrySettings(auto_runs=5), diagnosis, (CellFrame(7),), {}, (), None, None, None
    )
    offer = request.offer
    text = "\n".join(offer_lines(offer))
    assert "A retry reruns the whole cell from its first line. These run again:" in text
    assert "  line 2: results.append(len(results))" in text
    assert retry_state(request).offer == offer
    assert to_json(offer)["reruns"][0] == "line 2: results.append(len(results))"


def test_shell_and_magic_lines_before_the_failing_line_are_named():
    """Issue 22 item 12: ``!shell`` and ``%magic`` lines ran again with each attempt but were
    not named in "These run again"."""
    cell = (
        "%%gpuguard\n"
        "!wget -q https://example.org/data.zip\n"
        "files = !ls data\n"
        "%run prepare.py\n"
        "model?\n"
        "model.fit(x, y, batch_size=256)\n"
        "%store model\n"
    )
    assert rerun_statements(cell, failing_line=6) == (
        "line 2: !wget -q https://example.org/data.zip",
        "line 3: files = !ls data",
        "line 4: %run prepare.py",
    )
