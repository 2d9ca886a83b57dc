"""scripts/install_system_deps.sh waits for another apt/dpkg's package lock (bounded, with a
message), against a fake apt-get on a PATH where none of the system programs exist."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_system_deps.sh"
LOCK_ERROR = (
    "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)\n"
    "E: Unable to lock directory /var/lib/apt/lists/\n"
)


def run_script(tmp_path: Path, failures: int, error: str = LOCK_ERROR, wait: str = "30"):
    """Run the script with an apt-get that fails ``failures`` times with ``error``, then works;
    returns (completed process, the apt-get calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("env", "id", "mktemp", "cat", "rm", "grep", "sleep", "wc"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
    calls, errors = tmp_path / "calls", tmp_path / "error"
    errors.write_text(error)
    (bin_dir / "apt-get").write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {calls}\n'
        f'if [ "$(wc -l < {calls})" -le {failures} ]; then cat {errors} >&2; exit 100; fi\n'
        "exit 0\n"
    )
    for name in ("sudo", "apt-get"):
        (bin_dir / name).chmod(0o755)
    env = {"PATH": str(bin_dir), "PIXELRL_APT_LOCK_WAIT": wait, "PIXELRL_APT_LOCK_POLL": "0.1"}
    proc = subprocess.run(
        ["/bin/bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )
    lines = calls.read_text().splitlines() if calls.exists() else []
    return proc, lines


def test_waits_for_the_package_lock_with_a_message_then_installs(tmp_path):
    proc, calls = run_script(tmp_path, failures=2)
    assert proc.returncode == 0, proc.stderr
    waits = [line for line in proc.stderr.splitlines() if "waiting for another apt/dpkg" in line]
    assert len(waits) == 2 and "held by process 4242" in waits[0]
    assert [c.split()[0] for c in calls] == ["update", "update", "update", "install"]
    assert "xvfb" in calls[-1].split()


def test_gives_up_after_the_bound(tmp_path):
    proc, calls = run_script(tmp_path, failures=10_000, wait="1")
    assert proc.returncode == 100
    assert "still holds the package lock after 1s" in proc.stderr
    # at least the first try; how many more fit in 1 s depends on the machine's load (one on a
    # loaded CI runner), retrying itself is the test above's
    assert 1 <= len(calls) <= 30 and all(c.startswith("update") for c in calls)


def test_other_failures_are_not_retried(tmp_path):
    proc, calls = run_script(tmp_path, failures=1, error="E: Unable to locate package xvfb\n")
    assert proc.returncode == 100
    assert "Unable to locate package xvfb" in proc.stderr
    assert "waiting" not in proc.stderr and len(calls) == 1
