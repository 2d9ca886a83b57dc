"""DD-PPO under torchrun with 2 CPU processes (gloo): ranks stay identical, stragglers are cut."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent
REPO = HERE.parent.parent


def _torchrun(out: Path, *args: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(REPO)]), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc = subprocess.run(
        [*cmd, str(HERE / "ddppo_worker.py"), str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(2)]


@pytest.mark.timeout(300)
def test_two_process_ddppo_keeps_parameters_identical(tmp_path):
    ranks = _torchrun(tmp_path)
    assert [r["world_size"] for r in ranks] == [2, 2]
    a, b = ranks[0]["state"], ranks[1]["state"]
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
    # the ranks collected different experience (different seeds) but trained one policy
    assert ranks[0]["frames"] == ranks[1]["frames"] == 3 * 32 * 4 * 2

    # and it actually trained: the saved checkpoint differs from a fresh policy of the same seed
    from toy_nav import register_toy_recipe

    from pixelrl.recipes import get_recipe
    from pixelrl.train import config_for

    cfg = config_for(register_toy_recipe())
    torch.manual_seed(int(cfg.seed))
    envs = get_recipe(cfg.recipe).load_task().make_envs(cfg, 1, 0, "train")
    fresh = (
        get_recipe(cfg.recipe)
        .load_task()
        .make_policy(cfg, envs.single_observation_space, envs.single_action_space)
    )
    assert not torch.equal(fresh.state_dict()["actor.weight"], a["actor.weight"])


@pytest.mark.timeout(300)
def test_ddppo_ranks_collect_in_one_ray_cluster(tmp_path):
    pytest.importorskip("ray", reason="the Ray backend is the distributed extra")
    ranks = _torchrun(tmp_path, "ray")
    a, b = ranks[0]["ray"], ranks[1]["ray"]
    assert a["envs"] == b["envs"] == "RayVectorEnv"
    # rank 0 started the cluster; rank 1 joined it instead of starting its own
    assert a["gcs_address"] == b["gcs_address"]
    assert a["faults"] == b["faults"] == 0
    assert ranks[0]["frames"] == ranks[1]["frames"] == 3 * 32 * 4 * 2
    for name in ranks[0]["state"]:
        torch.testing.assert_close(ranks[0]["state"][name], ranks[1]["state"][name], rtol=0, atol=0)


@pytest.mark.timeout(300)
def test_straggler_preemption_cuts_the_slow_rank_short(tmp_path):
    ranks = _torchrun(tmp_path, "slow")
    fast, slow = ranks[0]["steps"], ranks[1]["steps"]
    assert fast == [32, 32, 32]
    assert all(8 <= s < 32 for s in slow), slow  # stopped once rank 0 was done (>= 25 % of steps)
    a, b = ranks[0]["state"], ranks[1]["state"]
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
