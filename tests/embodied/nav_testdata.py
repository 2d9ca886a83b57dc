"""Small navigation datasets and settings shared by the embodied tests."""

from __future__ import annotations

from pathlib import Path

# small apartments so that episodes stay short (seconds per test, not minutes)
APARTMENT = {"rooms": [2, 3]}
# one empty room with the goal close by and in view: the "trivial" learning setting
TRIVIAL_OVERRIDES = [
    "env.num_envs=4",
    "ppo.num_steps=32",
    "ppo.lr=1e-3",
    "ppo.linear_lr_decay=false",  # a short run: keep the step size to the end
    "env.kwargs.width=32",
    "env.kwargs.height=32",
    "env.kwargs.num_scenes=2",
    "env.kwargs.apartment={rooms: [1, 1], clutter: 0.0}",
    "env.kwargs.episode_rules={min_geodesic: 1.0, max_geodesic: 2.0, min_ratio: 1.0}",
    "env.kwargs.turn_angle=30",
    "env.kwargs.max_episode_steps=40",
    "env.eval_kwargs.num_scenes=2",
    "policy.hidden_size=64",
    "policy.base_planes=8",
    "policy.ngroups=4",
    "policy.feature_size=128",
    "train.eval_interval=0",
    "train.checkpoint_interval=0",
    "train.tensorboard=false",
    "train.progress=false",
]


def make_pointnav_dataset(
    path: Path,
    episodes: int = 10,
    scene_seed: int = 500,
    max_geodesic: float = 8.0,
    apartment: dict | None = None,
    min_geodesic: float = 1.0,
    min_ratio: float = 1.1,
) -> Path:
    """A habitat ``.json.gz`` PointNav dataset over 3 procedural apartments (habitat's rules)."""
    from pixelrl.envs.nav.sim import generate_dataset

    rules = {"min_geodesic": min_geodesic, "max_geodesic": max_geodesic, "min_ratio": min_ratio}
    generate_dataset(
        str(path),
        episodes,
        seed=0,
        num_scenes=3,
        scene_seed=scene_seed,
        apartment=apartment or APARTMENT,
        episode_rules=rules,
    )
    return path
