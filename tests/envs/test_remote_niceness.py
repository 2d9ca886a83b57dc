"""A local Ray that pixelrl starts runs its env workers at the driver's priority, not Ray's
nice 15 (at which anything else on the machine starves the envs the trainer waits on)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")

PROBE = """
import os, ray
from pixelrl.envs.remote import ensure_ray
assert ensure_ray(num_cpus=1)
print(ray.get(ray.remote(lambda: os.getpriority(os.PRIO_PROCESS, 0)).remote()))
ray.shutdown()
"""


def test_ensure_ray_starts_workers_at_this_processs_priority():
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_worker_niceness")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == str(os.getpriority(os.PRIO_PROCESS, 0))
