"""Files written before the one import namespace (top-level ``envs``, ``embodied`` ...) still load.

``tests/data/old_layout/`` was made by the commit before the change (7073756), with the
repository's folders importing as top-level packages:

- ``desktop_dataset/``: ``pixelrl record --env pixelrl/Desktop-FillForm-v0 --agent expert
  --episodes 2 --env-kwargs '{"screen_size": [320, 240]}'``
- ``pointnav_checkpoint.pt``: ``pixelrl train embodied/pointnav-small train.total_frames=256
  env.num_envs=2 ppo.num_steps=32 policy.feature_size=16 policy.hidden_size=16``
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch

from pixelrl import envs  # noqa: F401  (registers the ids)
from pixelrl.checkpoint import CheckpointError, load_checkpoint
from pixelrl.legacy import current_module

OLD = Path(__file__).resolve().parents[1] / "data" / "old_layout"


def test_old_module_names_map_to_the_namespace():
    assert current_module("envs.nav.config") == "pixelrl.envs.nav.config"
    assert current_module("gui_agent") == "pixelrl.gui_agent"
    assert current_module("pixelrl.envs.nav") == "pixelrl.envs.nav"
    assert current_module("numpy.core.multiarray") == "numpy.core.multiarray"
    assert current_module("envsx.thing") == "envsx.thing"


def test_a_checkpoint_of_the_old_layout_benchmarks(tmp_path):
    from pixelrl.embodied.benchmark import make_agent
    from pixelrl.envs.nav.sim import generate_dataset

    path = OLD / "pointnav_checkpoint.pt"
    ckpt = load_checkpoint(path)
    assert ckpt["recipe"] == "embodied/pointnav-small"
    kwargs = ckpt["config"]["env"]["kwargs"]
    dataset = tmp_path / "episodes.json.gz"
    generate_dataset(
        dataset,
        3,
        seed=3,
        task="pointnav",
        num_scenes=1,
        scene_seed=kwargs["scene_seed"],
        apartment=kwargs["apartment"],
    )
    # `pixelrl bench nav --agent checkpoint PATH`: the recipe rebuilds the policy, weights load
    bench, agent = make_agent("checkpoint", dataset, checkpoint=str(path), deterministic=True)
    try:
        weights = agent.policy.state_dict()
        assert all(torch.equal(weights[k], v) for k, v in ckpt["policy"].items())
        means = bench.evaluate(agent, progress=False)
    finally:
        bench.close()
    assert len(bench.rows) == 3 and all(r["valid"] for r in bench.rows)
    assert 0.0 <= means["spl"] <= 1.0 and np.isfinite(means["distance_to_goal"])


def test_a_class_pickled_into_a_checkpoint_is_refused_under_either_module_name(tmp_path):
    """Checkpoints are read as data: a class of ours pickled into one (which the old layout's
    loader resolved under ``envs.*``) is refused like any other code, under either name."""
    from pixelrl.envs.nav.config import NavConfig

    # torch's sequential (non-zip) format is one pickle stream; protocol 2 names a class as the
    # text "module\nname", so the file the old layout wrote differs only in that text.
    payload = {
        "format": "pixelrl-checkpoint",
        "config": {},
        "policy": {},
        "nav": NavConfig(width=48),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer, _use_new_zipfile_serialization=False)
    new_name, old_name = b"pixelrl.envs.nav.config\nNavConfig", b"envs.nav.config\nNavConfig"
    assert buffer.getvalue().count(new_name) == 1
    new, old = tmp_path / "new.pt", tmp_path / "old.pt"
    new.write_bytes(buffer.getvalue())
    old.write_bytes(buffer.getvalue().replace(new_name, old_name))
    for path, name in ((new, "pixelrl.envs.nav.config.NavConfig"), (old, "envs")):
        with pytest.raises(CheckpointError, match=f"refused: .*{name}"):
            load_checkpoint(path)


def test_a_missing_checkpoint_is_still_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError):
        load_checkpoint(tmp_path / "none.pt")


def test_a_dataset_of_the_old_layout_loads_and_replays_exactly():
    from pixelrl.envs.recording import EpisodeDataset, replay_dataset

    dataset = EpisodeDataset(OLD / "desktop_dataset")
    assert dataset.info.env_id == "pixelrl/Desktop-FillForm-v0"
    assert len(dataset.episodes) == 2
    results = replay_dataset(dataset)
    assert [r.ok for r in results] == [True, True], results
    assert np.mean([r.frame_match_rate for r in results]) == 1.0
