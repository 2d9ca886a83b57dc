"""bench/miniwob_table.py's markdown table (issue 54): a --csv table read back, another run
beside it, and the means the docs quote."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.gui_agent.test_miniwob_recipe import _table_bench

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "miniwob_table.py"
WIDE = ROOT / "docs" / "results" / "miniwob_wide_table.csv"  # the 0.877 run (16th session)


def test_the_markdown_table_gives_the_docs_means_of_the_wide_run():
    table = _table_bench()
    rows = table.pool(table.read_rows(str(WIDE)))
    assert [r["task"] for r in rows] == list(table.PUBLISHED)
    text = table.markdown_table(rows, {"before": {"click-button": 0.5}})
    lines = text.splitlines()
    assert lines[0] == "| task | ours [95% CI] | before | human | CC-Net | Pix2Act |"
    assert "| click-button | 0.99 [0.95, 1.00] | 0.50 | 0.98 | 1.00 | 0.99 |" in lines
    assert "| enter-text | 1.00 [0.96, 1.00] | - | 0.98 | 1.00 | - |" in lines
    # docs/results/miniwob.md, "The wide set": 0.877 [0.865, 0.888]; 0.974; 0.819; 0.846
    means = lines[-4:]
    assert means[0] == "| mean, 32 tasks | **0.877** [0.865, 0.888] | - | 0.966 | 0.985 | - |"
    assert means[1].startswith("| mean, the 12 of `gui/miniwob` | **0.974**")
    assert means[2].startswith("| mean, the 20 further tasks of the wide set | **0.819**")
    assert means[3].endswith("| 0.963 | 0.982 | 0.988 |") and "**0.846**" in means[3]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--beside", "old"], "--beside takes LABEL=CSV"),
        (["--markdown", "--beside", "old=/nonexistent.csv"], "not a --json or --csv table"),
        (["--beside", f"old={WIDE}"], "--beside needs --markdown"),
    ],
)
def test_a_wrong_table_argument_is_one_error_line(args, message):
    done = subprocess.run([sys.executable, str(BENCH), "--merge", str(WIDE), *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr.strip().splitlines()[-1]
    assert "Traceback" not in done.stderr
