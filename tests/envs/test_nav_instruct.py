"""pixelrl/InstructNav-v0: instructions true to the apartment, reachable goals, Success against
the geodesic, habitat/VLN-CE episode files both ways, the Gymnasium contract, the expert."""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import pixelrl.envs  # noqa: F401  (registers the ids)
from pixelrl.envs.nav.apartment import ApartmentConfig, generate_apartment
from pixelrl.envs.nav.dataset import EpisodeFileError, load_episodes, save_episodes, tokenize
from pixelrl.envs.nav.env import NavEnv
from pixelrl.envs.nav.geodesic import geodesic_distance, geodesic_graph
from pixelrl.envs.nav.instructions import (
    VOCABULARY,
    InstructionRules,
    generate_instructnav_episode,
)
from pixelrl.envs.nav.navgrid import NavGrid
from pixelrl.envs.nav.sim import apartment_scene_id, generate_dataset

SMALL = dict(width=32, height=32, num_scenes=2, sensors=("rgb",))
SEEDS = (3, 11)  # apartments of 5-6 rooms: routes through 1, 2 and 3 rooms
TURNS = {"in front of you": 0.0, "on your left": 90.0, "on your right": -90.0, "behind you": 180.0}


@pytest.fixture(scope="module")
def env():
    """An InstructNav env over the apartments of ``SEEDS`` (tiny depth frames)."""
    scenes = [apartment_scene_id(s) for s in SEEDS]
    env = NavEnv(task="instructnav", scenes=scenes, width=16, height=16, sensors=("depth",))
    yield env
    env.close()


@pytest.fixture(scope="module")
def drawn(env):
    """Episodes of the env's apartments, as (grid, episode) pairs: routes of 1-3 rooms."""
    out = []
    for k, scene_id in enumerate(env.sim.scene_ids):
        grid = env.sim.grid(k)
        rng = np.random.default_rng(k)
        out += [(grid, generate_instructnav_episode(grid, rng, scene_id, str(i))) for i in range(8)]
    return out


def expert_actions(env: NavEnv, episode, goal_radius: float) -> list[int]:
    """The shortest-path follower's actions in ``episode``, aiming within ``goal_radius``."""
    from pixelrl.envs.nav.follower import ShortestPathFollower

    env.reset(seed=0, options={"episode": episode})
    cfg = env.cfg
    follower = ShortestPathFollower(env.state.field, goal_radius, cfg.turn_degrees)
    follower.reset()
    actions = []
    while not actions or actions[-1] != 0:
        actions.append(follower.get_next_action(env.state.position, env.state.yaw))
        env.step(actions[-1])
    return actions


def run(env: NavEnv, episode, actions: list[int]) -> dict:
    env.reset(seed=0, options={"episode": episode})
    for action in actions:
        *_, info = env.step(action)
    return info


def test_check_env():
    env = gym.make("pixelrl/InstructNav-v0", **SMALL).unwrapped
    check_env(env, skip_render_check=True)
    assert isinstance(env.observation_space["instruction"], gym.spaces.Text)
    env.close()


def test_same_seed_same_actions_same_everything():
    a, b = NavEnv(task="instructnav", **SMALL), NavEnv(task="instructnav", **SMALL)
    rng = np.random.default_rng(0)
    for seed in (5, 6):
        oa, ia = a.reset(seed=seed)
        ob, ib = b.reset(seed=seed)
        assert oa["instruction"] == ob["instruction"] and ia == ib
        for action in rng.integers(1, 4, 25).tolist() + [0]:
            oa, ra, *_, ia = a.step(action)
            ob, rb, *_, ib = b.step(action)
            assert ra == rb and ia == ib
            assert oa["instruction"] == ob["instruction"]
            np.testing.assert_array_equal(oa["rgb"], ob["rgb"])
            np.testing.assert_array_equal(oa["gps"], ob["gps"])


def test_instruction_describes_the_shortest_route(drawn):
    """Independently of the generator: the rooms the shortest path walks through, the door it
    leaves by and where that door lies from the start pose match the words."""
    lengths = set()
    for grid, ep in drawn:
        layout = grid.scene.layout
        text = ep.instruction.instruction_text
        field = geodesic_graph(grid).field(ep.goal_points(), seed_radius=grid.cell * 0.75)
        rooms = []
        for p in field.path(ep.start_position, max_points=10_000):
            k = layout.room_at(p[0], p[2])
            if k is not None and (not rooms or rooms[-1] != k):
                rooms.append(k)
        lengths.add(len(rooms))
        assert ep.info["rooms"] == len(rooms)
        assert text.count("door") == len(rooms) - 1
        goal_room = layout.rooms[rooms[-1]]
        # the goals are the objects of the named category in the goal room: "the" one or "a" one
        category = ep.goals[0].object_category
        word = {"tv_monitor": "tv"}.get(category, category)
        there = grid.scene.goal_instances(category)
        there = [i.instance_id for i in there if goal_room.contains(i.center[0], i.center[2])]
        assert f" {'the' if len(there) == 1 else 'a'} {word} in " in text
        assert {g.object_id for g in ep.goals} <= set(there)
        assert {g.object_category for g in ep.goals} == {category}
        if len(rooms) == 1:
            assert text.endswith("in this room.")
            continue
        # each door, seen from the start pose (the first) or standing in the door before it,
        # facing into the room (the others): within 45 degrees of what the words say
        said = re.findall(r"door (in front of you|on your left|on your right|behind you)", text)
        doors = [
            next(d for d in layout.doors if set(d.rooms) == set(pair))
            for pair in zip(rooms, rooms[1:])
        ]
        yaw = 2 * math.atan2(ep.start_rotation[1], ep.start_rotation[3])
        here = ep.start_position[[0, 2]]
        for k, (door, words) in enumerate(zip(doors, said, strict=True)):
            if k:
                previous, room = doors[k - 1], layout.rooms[rooms[k]]
                here = np.array([previous.x, previous.z])
                into = np.array([(room.x0 + room.x1) / 2, (room.z0 + room.z1) / 2]) - here
                into[0 if previous.axis == "z" else 1] = 0  # along the wall's normal
                yaw = math.atan2(-into[0], -into[1])
            forward = np.array([-math.sin(yaw), -math.cos(yaw)])
            left = np.array([-math.cos(yaw), math.sin(yaw)])
            to_door = np.array([door.x, door.z]) - here
            angle = math.degrees(math.atan2(to_door @ left, to_door @ forward))
            assert abs(math.remainder(angle - TURNS[words], 360)) < 45
    assert lengths == {1, 2, 3}


def test_goal_is_reachable_and_success_agrees_with_the_geodesic(env, drawn):
    radius = env.cfg.success_radius
    checked = {True: 0, False: 0}
    for grid, ep in drawn[::2]:
        start, goal = ep.start_position, ep.goal_points()
        assert all(grid.island_of(start) == grid.island_of(g) > 0 for g in goal)
        assert {g.radius for g in ep.goals} == {radius} == {1.0}
        # the stored length is the geodesic, recomputed from scratch
        d0 = geodesic_distance(grid, start, goal)
        assert d0 == pytest.approx(ep.info["geodesic_distance"], rel=0.02)
        assert d0 >= radius + 1.0 - 1e-9  # never a success by stopping at once
        actions = expert_actions(env, ep, goal_radius=0.5 * radius)
        info = run(env, ep, actions)
        assert info["success"] == 1.0 and info["spl"] > 0.9
        # stopping on the way: Success exactly when the geodesic to the goal is under the radius
        for k in range(len(actions) - 1, max(len(actions) - 12, 0), -2):
            info = run(env, ep, actions[:k] + [0])
            d = geodesic_distance(grid, env.state.position, goal)
            if abs(d - radius) > 0.05:  # the grid field and a fresh search agree to ~1-3 %
                assert bool(info["success"]) == (d < radius)
                checked[d < radius] += 1
    assert checked[True] and checked[False]


def test_words_come_from_the_small_vocabulary(drawn):
    texts = [ep.instruction.instruction_text for _, ep in drawn]
    words = {w for t in texts for w in tokenize(t)} - {",", "."}
    assert words <= VOCABULARY
    assert len(set(texts)) == len(texts)  # every episode needs reading


@pytest.mark.parametrize("apartment, rooms", [((1, 2), (1, 2)), ((2, 3), (2, 3)), ((2, 3), (1, 2))])
def test_small_apartments_and_route_lengths(apartment, rooms):
    env = NavEnv(
        task="instructnav",
        apartment={"rooms": apartment},
        instruction_rules={"rooms": rooms},
        **SMALL,
    )
    seen = set()
    for seed in range(8):
        obs, _ = env.reset(seed=seed)
        n = env.state.episode.info["rooms"]
        assert rooms[0] <= n <= rooms[1]
        seen.add(n)
        assert obs["instruction"].endswith(".")
    assert max(seen) >= 2  # some episodes cross into another room
    env.close()


def test_impossible_route_lengths_are_a_clear_error():
    grid = NavGrid(generate_apartment(0, ApartmentConfig(rooms=(1, 1))))
    with pytest.raises(RuntimeError, match="no unambiguous route through 2-3 rooms"):
        generate_instructnav_episode(
            grid, np.random.default_rng(0), "apartment:seed=0", "0", None, InstructionRules((2, 3))
        )


def test_dataset_round_trip_and_env_reads_it(tmp_path):
    path = tmp_path / "instruct.json.gz"
    episodes = generate_dataset(str(path), 4, seed=1, task="instructnav", num_scenes=2)
    with gzip.open(path, "rt") as f:
        raw = json.load(f)
    first = raw["episodes"][0]
    assert set(first["instruction"]) == {"instruction_text", "instruction_tokens"}
    words = raw["instruction_vocab"]["word_list"]
    assert [words[t] for t in first["instruction"]["instruction_tokens"]] == tokenize(
        first["instruction"]["instruction_text"]
    )
    assert first["goals"][0]["radius"] == 1.0 and len(first["reference_path"]) >= 2
    back = load_episodes(path)
    for a, b in zip(episodes, back):
        assert a.instruction.instruction_text == b.instruction.instruction_text
        np.testing.assert_allclose(a.reference_path, b.reference_path)
        np.testing.assert_allclose(a.goal_points(), b.goal_points())
        assert a.info["geodesic_distance"] == pytest.approx(b.info["geodesic_distance"])
    env = gym.make("pixelrl/InstructNav-v0", dataset_path=str(path), **SMALL)
    for ep in back:
        obs, info = env.reset()
        assert obs["instruction"] == ep.instruction.instruction_text
        assert info["episode_id"] == ep.episode_id
    env.close()


def r2r_file(path, episodes, radius=3.0) -> None:
    """A file in VLN-CE's R2R layout (``R2R_VLNCE_v1-3``): int ids, padded int tokens, the full
    ``instruction_vocab`` object, ``reference_path``, goals with radius 3. Its top level keeps
    what our writer puts there besides the episodes (procedural scene ids need it)."""
    save_episodes(path, episodes)
    with gzip.open(path, "rt") as f:
        header = {k: v for k, v in json.load(f).items() if k != "episodes"}
    words = ["<pad>", "<unk>", "<s>", "</s>"]
    out = []
    for k, ep in enumerate(episodes):
        text = ep.instruction.instruction_text.capitalize().replace("tv", "TV")
        tokens = []
        for word in tokenize(text):
            if word not in words:
                words.append(word)
            tokens.append(words.index(word))
        out.append(
            {
                "episode_id": 100 + k,
                "trajectory_id": 7 + k,
                "scene_id": ep.scene_id,
                "start_position": ep.start_position.tolist(),
                "start_rotation": ep.start_rotation.tolist(),
                "info": {"geodesic_distance": ep.info["geodesic_distance"]},
                "goals": [{"position": ep.goals[0].position.tolist(), "radius": radius}],
                "instruction": {
                    "instruction_text": text,
                    "instruction_tokens": tokens + [0] * (200 - len(tokens)),
                },
                "reference_path": ep.reference_path.tolist(),
            }
        )
    vocab = {
        "word_list": words,
        "word2idx_dict": {w: i for i, w in enumerate(words)},
        "itos": words,
        "stoi": {w: i for i, w in enumerate(words)},
        "num_vocab": len(words),
        "UNK_INDEX": 1,
        "PAD_INDEX": 0,
    }
    with gzip.open(path, "wt") as f:
        json.dump({**header, "episodes": out, "instruction_vocab": vocab}, f)


def test_vlnce_r2r_layout_loads_and_is_judged_by_its_radius(tmp_path, drawn):
    path = tmp_path / "val_seen.json.gz"
    episodes = [ep for grid, ep in drawn if grid is drawn[0][0]][:3]
    r2r_file(path, episodes)
    back = load_episodes(path)
    assert [e.episode_id for e in back] == ["100", "101", "102"]
    assert back[0].trajectory_id == 7 and len(back[0].instruction.instruction_tokens) == 200
    env = NavEnv(task="instructnav", dataset_path=str(path), **SMALL)
    assert env.cfg.success_radius == 3.0  # VLN-CE's success distance, from the goals' radius
    obs, _ = env.reset()
    assert obs["instruction"] == back[0].instruction.instruction_text
    assert obs["instruction"][0].isupper()
    env.close()
    env = NavEnv(task="instructnav", dataset_path=str(path), success_distance=1.5, **SMALL)
    assert env.cfg.success_radius == 1.5  # what the user asks for wins
    env.close()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda e: e.pop("instruction"), r"episodes\[1\] has no 'instruction'"),
        (lambda e: e["instruction"].pop("instruction_text"), r"episodes\[1\]\.instruction must"),
        (lambda e: e.update(instruction="go"), r"episodes\[1\]\.instruction must"),
        (lambda e: e.update(reference_path=[[0, 1]]), r"episodes\[1\]\.reference_path\[0\]"),
        (lambda e: e["goals"][0].update(radius=0.5), "radius differs between episodes"),
        (lambda e: e.pop("goals"), r"episodes\[1\]\.goals must be a non-empty list"),
    ],
)
def test_partial_files_are_clear_errors(tmp_path, drawn, change, message):
    path = tmp_path / "bad.json.gz"
    r2r_file(path, [ep for _, ep in drawn[:2]])
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    change(data["episodes"][1])
    with gzip.open(path, "wt") as f:
        json.dump(data, f)
    with pytest.raises(EpisodeFileError, match=message):
        NavEnv(task="instructnav", dataset_path=str(path), **SMALL)


def test_unreadable_files_and_bad_options_are_clear_errors(tmp_path):
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(b'{"episodes": [{"episode_id": 1, "instr')[:-4])
    with pytest.raises(EpisodeFileError, match="not a gzip JSON episode file"):
        NavEnv(task="instructnav", dataset_path=str(cut), **SMALL)
    with pytest.raises(ValueError, match="'instruction_rules'.*argument 'room'.*keys: rooms"):
        NavEnv(task="instructnav", instruction_rules={"room": (1, 2)}, **SMALL)
    with pytest.raises(ValueError, match="instruction_rules.rooms must be"):
        NavEnv(task="instructnav", instruction_rules={"rooms": (0, 2)}, **SMALL)
    with pytest.raises(ValueError, match="'instruction_rules' is for task 'instructnav'"):
        gym.make("pixelrl/PointNav-v0", instruction_rules={"rooms": (1, 2)}, **SMALL)
    with pytest.raises(ValueError, match="embedded simulator only"):
        gym.make("pixelrl/InstructNav-v0", backend="habitat")


def test_scenes_without_a_layout_need_a_dataset(tmp_path):
    from pixelrl.envs.nav.mesh_io import export_glb

    path = tmp_path / "flat.glb"
    export_glb(generate_apartment(3), path)
    env = NavEnv(task="instructnav", scenes=[str(path)], **SMALL)
    with pytest.raises(ValueError, match="has no room layout.*dataset_path"):
        env.reset(seed=0)


def test_vector_env_batches_instructions_as_text():
    envs = gym.make_vec(
        "pixelrl/InstructNav-v0", 2, vectorization_mode="vector_entry_point", **SMALL
    )
    obs, _ = envs.reset(seed=0)
    assert isinstance(obs["instruction"], tuple) and len(obs["instruction"]) == 2
    assert envs.observation_space.contains(obs)
    envs.close()


def test_expert_records_demonstrations_and_benchmarks(tmp_path, capsys):
    """The SFT data path: ``pixelrl record --agent expert`` keeps the instruction with every
    step and replays exactly; ``pixelrl bench nav`` finds the task from the file."""
    from pixelrl.commands import bench, record, replay
    from pixelrl.envs.recording import EpisodeDataset

    parser = argparse.ArgumentParser(prog="pixelrl")
    subparsers = parser.add_subparsers()
    for command in (record, replay, bench):
        command.add_parser(subparsers)

    def main(argv: list[str]) -> int:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)

    out = tmp_path / "demos"
    kwargs = json.dumps({**SMALL, "num_scenes": 1})
    argv = ["record", "--env", "pixelrl/InstructNav-v0", "--agent", "expert", "--episodes", "2"]
    assert main(argv + ["--out", str(out), "--env-kwargs", kwargs]) == 0
    assert "success rate 100%" in capsys.readouterr().out
    data = EpisodeDataset(out)
    assert len(data) == 2
    texts = data.to_pandas().groupby("episode_index")["instruction"].unique()
    assert all(len(t) == 1 and " the " in t[0] for t in texts)  # one instruction an episode
    assert main(["replay", str(out)]) == 0
    assert "2/2 episodes replay exactly" in capsys.readouterr().out

    dataset = tmp_path / "eval.json.gz"
    rules = {"geodesic": "grid"}
    generate_dataset(str(dataset), 3, seed=2, task="instructnav", num_scenes=1, episode_rules=rules)
    argv = ["bench", "nav", "--dataset", str(dataset), "--agent", "expert"]
    assert main(argv + ["--out", str(tmp_path / "bench")]) == 0
    capsys.readouterr()
    (csv_path,) = (tmp_path / "bench").rglob("episodes.csv")
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 and all(float(r["success"]) == 1.0 for r in rows)


def test_the_expert_steps_off_a_corner_it_cannot_round():
    """Found by the InstructNav benchmark (1 episode in 250): pinned on a door jamb, no 30-degree
    heading makes progress in one step; the follower used to walk into the wall until the step
    limit. It now steps off the corner and reaches the goal."""
    from pixelrl.envs.nav.follower import ShortestPathFollower
    from pixelrl.envs.nav.geometry import forward_vector

    grid = NavGrid(generate_apartment(1001))
    goal = np.array([[2.675, 0.0, 4.525]])
    field = geodesic_graph(grid).field(goal, seed_radius=grid.cell * 0.75)
    follower = ShortestPathFollower(field, 0.75, 30.0)
    follower.reset()
    position, yaw = np.array([2.99103414, 0.0, 5.01064148]), 1.4445719219547577
    assert field.distance(position) == pytest.approx(0.834, abs=0.01)
    for _ in range(60):
        action = follower.get_next_action(position, yaw)
        if action == 0:
            break
        if action == 1:
            position, _ = grid.try_step(position, position + 0.25 * forward_vector(yaw), True)
        else:
            yaw += math.radians(30) * (1 if action == 2 else -1)
    assert action == 0 and field.distance(position) <= 0.75
