"""Recording format: record -> load -> replay, validation of damaged datasets, resume, loaders.

Uses the small deterministic envs of ``recording_toy_env`` (a GUI one with PNG screenshots, a
navigation-like one with MP4 frames, NPZ depth and a goal column), so it runs without the
other backends.
"""

from __future__ import annotations

import json
import shutil

import gymnasium
import numpy as np
import pyarrow.parquet as pq
import pytest
import recording_toy_env  # noqa: F401  (registers pixelrl/RecordingToy*)

from pixelrl.envs.gui_action import Action, ActionError
from pixelrl.envs.recording import (
    DatasetError,
    EpisodeDataset,
    RecordEpisodes,
    make_recording_vector_env,
    replay_dataset,
)
from pixelrl.envs.recording.format import MANIFEST_PATH, read_manifest
from pixelrl.envs.recording.view import view_episode

GUI = "pixelrl/RecordingToyGUI-v0"
NAV = "pixelrl/RecordingToyNav-v0"


def play_gui(env, seed: int, script=("type", "bad", "miss", "expert")) -> None:
    """One episode: type some text, send invalid text (recorded as is), miss, then solve."""
    env.reset(seed=seed)
    for step in script:
        if step == "type":
            action = Action.type_text("hi")
        elif step == "bad":
            action = "pyautogui.explode()"
        elif step == "miss":
            x0, y0, x1, y1 = env.unwrapped._box
            action = {"kind": 1, "point": np.array([(x0 + 40) % 96, (y0 + 30) % 64])}
        else:
            action = env.unwrapped.expert_action()
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return
    raise AssertionError("the scripted episode did not end")


def record_gui(root, episodes: int = 3, **kwargs) -> RecordEpisodes:
    env = RecordEpisodes(gymnasium.make(GUI), root, **kwargs)
    for k in range(episodes):
        play_gui(env, seed=10 + k)
    env.close()
    return env


def play_nav(root, episodes: int = 2, **kwargs) -> RecordEpisodes:
    env = RecordEpisodes(gymnasium.make(NAV), root, **kwargs)
    for k in range(episodes):
        env.reset(seed=k)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.unwrapped.expert_action())
            done = terminated or truncated
    env.close()
    return env


def test_gui_record_load_replay_exact(tmp_path):
    root = tmp_path / "gui"
    env = record_gui(root)
    assert [e.episode_index for e in env.episodes] == [0, 1, 2]
    data = EpisodeDataset(root)
    assert not data.problems and len(data) == 3
    info = json.loads((root / "meta/info.json").read_text())
    assert info["schema_version"] == 1 and info["env_id"] == GUI and info["fps"] == 5
    assert info["features"]["screenshot"]["storage"] == "png"
    rows = data.steps(0)
    assert list(rows["frame_index"]) == [0, 1, 2, 3]
    assert list(rows["action"][:2]) == ["pyautogui.write('hi')", "pyautogui.explode()"]
    assert rows["action"][2].startswith("pyautogui.click(")
    assert list(rows["reward"]) == [0.0, -0.1, -0.01, 1.0]
    assert rows["success"].iloc[-1] and rows["terminated"].iloc[-1]
    assert (root / "frames/episode_000000/frame_000004.png").is_file()  # T + 1 frames
    # the stored frames are the observations, bit for bit
    fresh = gymnasium.make(GUI)
    obs, reset_info = fresh.reset(seed=10)
    assert rows["target_bbox"].iloc[0].tolist() == reset_info["target_bbox"]
    assert np.array_equal(data.frame(0, 0), obs["screenshot"])
    assert data.observation(0, 0)["instruction"] == obs["instruction"]
    results = replay_dataset(root)
    assert [r.ok for r in results] == [True] * 3
    assert all(r.frame_match_rate == 1.0 and r.first_divergent_step is None for r in results)


def test_replay_reports_first_divergent_step(tmp_path):
    root = tmp_path / "gui"
    record_gui(root, episodes=2)
    # rewrite episode 1's first action: the typed text changes the frame after step 0
    path = root / "data/chunk-000/episode_000001.parquet"
    table = pq.read_table(path)
    actions = table.column("action").to_pylist()
    actions[0] = "pyautogui.write('hello')"
    table = table.set_column(table.schema.get_field_index("action"), "action", [actions])
    pq.write_table(table, path)
    results = {r.episode_index: r for r in replay_dataset(root)}
    assert results[0].ok
    bad = results[1]
    assert not bad.ok and bad.first_divergent_step == 1
    assert bad.frames_matched == 1 and bad.frames_compared == 5


def test_nav_video_arrays_and_columns_replay(tmp_path):
    root = tmp_path / "nav"
    play_nav(root)
    data = EpisodeDataset(root)
    features = data.info.features
    assert (features["rgb"].storage, features["depth"].storage) == ("mp4", "npz")
    assert features["pointgoal_with_gps_compass"].column == "observation.pointgoal_with_gps_compass"
    assert (root / "videos/rgb/episode_000001.mp4").is_file()
    entry = data.episodes[0]
    assert data.frames(0, "rgb").shape == (entry.length + 1, 32, 32, 3)
    assert data.frames(0, "depth").dtype == np.float32
    assert data.steps(0)["action"].dtype == np.int64
    results = replay_dataset(root)
    assert all(r.ok for r in results), results


def test_damaged_episodes_are_reported_and_the_rest_loads(tmp_path):
    root = tmp_path / "gui"
    record_gui(root, episodes=6)
    # episode 1: truncated parquet file
    p1 = root / "data/chunk-000/episode_000001.parquet"
    p1.write_bytes(p1.read_bytes()[: p1.stat().st_size // 2])
    # episode 2: a missing frame
    (root / "frames/episode_000002/frame_000002.png").unlink()
    # episode 3: a data file of another schema version
    p3 = root / "data/chunk-000/episode_000003.parquet"
    table = pq.read_table(p3)
    pq.write_table(table.replace_schema_metadata({b"pixelrl.schema_version": b"99"}), p3)
    # episode 4: a column of the wrong type
    p4 = root / "data/chunk-000/episode_000004.parquet"
    table = pq.read_table(p4)
    index = table.schema.get_field_index("reward")
    pq.write_table(table.set_column(index, "reward", table.column("reward").cast("string")), p4)
    with pytest.warns(UserWarning, match="4 episode"):
        data = EpisodeDataset(root)
    assert data.episode_indices == [0, 5]
    by_episode = {p.episode_index: p for p in data.problems}
    assert by_episode[1].path == str(p1) and "truncated" in by_episode[1].message
    assert by_episode[2].path.endswith("frames/episode_000002/frame_000002.png")
    assert "missing" in by_episode[2].message
    assert by_episode[3].path == str(p3) and "schema_version 99" in by_episode[3].message
    assert (
        by_episode[4].path == str(p4)
        and "'reward' is string, expected double" in by_episode[4].message
    )
    assert "episode 1:" in str(by_episode[1])
    # the rest replays and trains
    assert all(r.ok for r in replay_dataset(data))
    with pytest.raises(KeyError, match="left out"):
        data.steps(1)
    with pytest.raises(DatasetError, match="episode 2"):
        EpisodeDataset(root, strict=True)


def test_wrong_dataset_schema_version_names_the_file(tmp_path):
    root = tmp_path / "gui"
    record_gui(root, episodes=1)
    info = json.loads((root / "meta/info.json").read_text())
    info["schema_version"] = 7
    (root / "meta/info.json").write_text(json.dumps(info))
    with pytest.raises(DatasetError, match=r"meta/info.json: schema_version is 7"):
        EpisodeDataset(root)
    with pytest.raises(DatasetError, match="not found"):
        EpisodeDataset(tmp_path / "nothing")


def test_manifest_entry_of_another_version_is_left_out(tmp_path):
    root = tmp_path / "gui"
    record_gui(root, episodes=2)
    lines = (root / MANIFEST_PATH).read_text().splitlines()
    entry = json.loads(lines[0])
    entry["schema_version"] = 0
    (root / MANIFEST_PATH).write_text(
        "\n".join([json.dumps(entry), lines[1], '{"episode_index": 9, "len']) + "\n"
    )
    with pytest.warns(UserWarning):
        data = EpisodeDataset(root)
    assert data.episode_indices == [1]
    assert {p.episode_index for p in data.problems} == {0, None}


def test_resume_appends_and_refuses_another_env(tmp_path):
    root = tmp_path / "gui"
    record_gui(root, episodes=2)
    with pytest.raises(DatasetError, match="resume"):
        RecordEpisodes(gymnasium.make(GUI), root)
    with pytest.raises(DatasetError, match="env_id"):
        RecordEpisodes(gymnasium.make(NAV), root, resume=True)
    # an unfinished episode of the second run is dropped; indices stay contiguous
    env = RecordEpisodes(gymnasium.make(GUI), root, resume=True)
    env.reset(seed=99)
    env.step(Action.type_text("x"))
    play_gui(env, seed=20)
    env.close()
    data = EpisodeDataset(root)
    assert data.episode_indices == [0, 1, 2] and data.episodes[2].seed == 20
    assert not (root / ".staging").exists() or not any((root / ".staging").iterdir())
    assert all(r.ok for r in replay_dataset(data))


def test_unseeded_resets_get_recorded_seeds(tmp_path):
    root = tmp_path / "gui"
    env = RecordEpisodes(gymnasium.make(GUI), root)
    env.reset(seed=3)
    env.step(env.unwrapped.expert_action())
    for _ in range(2):
        env.reset()  # no seed: the wrapper draws one and records it
        env.step(env.unwrapped.expert_action())
    env.close()
    seeds = [e.seed for e in read_manifest(root)[0]]
    assert seeds[0] == 3 and len(set(seeds)) == 3 and all(isinstance(s, int) for s in seeds)
    assert all(r.ok for r in replay_dataset(root))


def test_invalid_action_raised_by_env_records_nothing(tmp_path):
    class Strict(gymnasium.Wrapper):
        def step(self, action):
            if isinstance(action, str) and "explode" in action:
                raise ActionError("unknown function")
            return self.env.step(action)

    gymnasium.register(
        "recording_toy/Strict-v0", entry_point=lambda: Strict(recording_toy_env.ToyGUIEnv())
    )
    env = RecordEpisodes(gymnasium.make("recording_toy/Strict-v0"), tmp_path / "s")
    env.reset(seed=1)
    with pytest.raises(ActionError):
        env.step("pyautogui.explode()")
    env.step(env.unwrapped.expert_action())
    env.close()
    assert EpisodeDataset(tmp_path / "s").episodes[0].length == 1


def test_vector_env_recording_replays(tmp_path):
    root = tmp_path / "vec"
    env = make_recording_vector_env(NAV, 3, root)
    env.reset(seed=5)
    for _ in range(25):
        actions = np.array([e.unwrapped.expert_action() for e in env.unwrapped.envs])
        env.step(actions)
    env.close()
    data = EpisodeDataset(root)
    assert len(data) >= 6
    assert sorted(data.episode_indices) == list(range(len(data)))
    assert {e.seed for e in data.episodes.values()} >= {5, 6, 7}
    assert all(r.ok for r in replay_dataset(data))


def test_training_loaders(tmp_path):
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from pixelrl.envs.recording.training import (
        GUIStepDataset,
        NavEpisodeDataset,
        collate_gui_steps,
        load_hf_dataset,
    )

    record_gui(tmp_path / "gui", episodes=2)
    steps = GUIStepDataset(tmp_path / "gui")
    assert len(steps) == 6  # 8 steps, 2 invalid texts left out
    screenshot, instruction, action, text = steps[0]
    assert screenshot.shape == (64, 96, 3) and screenshot.dtype == np.uint8
    assert instruction.startswith("click the red box")
    assert action == Action.type_text("hi") and text == "pyautogui.write('hi')"
    batch = next(iter(DataLoader(steps, batch_size=4, collate_fn=collate_gui_steps)))
    assert tuple(batch["screenshot"].shape) == (4, 64, 96, 3)
    assert batch["action"][1].kind == "click"

    import datasets  # the data files also load as they are: one schema for every file

    raw = datasets.load_dataset(
        "parquet",
        data_files=str(tmp_path / "gui/data/*/*.parquet"),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )
    assert len(raw) == 8 and raw[0]["action"] == "pyautogui.write('hi')"
    assert raw.features["target_bbox"].feature.dtype == "int64"

    hf = load_hf_dataset(tmp_path / "gui", cache_dir=str(tmp_path / "hf"))
    assert len(hf) == 8
    row = hf[0]
    assert row["screenshot"].size == (96, 64) and row["action"] == Action.type_text("hi")
    assert hf[1]["action"] is None and hf[1]["action_text"] == "pyautogui.explode()"

    play_nav(tmp_path / "nav", episodes=2)
    nav = NavEpisodeDataset(tmp_path / "nav")
    frames, goal, actions = nav[0]
    T = len(actions)
    assert frames["rgb"].shape == (T, 32, 32, 3) and frames["depth"].shape == (T, 32, 32, 1)
    assert goal.shape == (T, 2) and actions[-1] == 0
    hf_nav = load_hf_dataset(tmp_path / "nav", cache_dir=str(tmp_path / "hf"))
    assert len(hf_nav[0]["goal"]) == 2 and hf_nav[0]["rgb"].shape == (32, 32, 3)


def test_view_writes_gif_with_one_frame_per_observation(tmp_path):
    from PIL import Image

    root = tmp_path / "gui"
    record_gui(root, episodes=1)
    path, n = view_episode(root, 0, tmp_path / "ep.gif", scale=2)
    with Image.open(path) as gif:
        assert gif.n_frames == n == 5
        assert gif.size[0] == 192
    play_nav(tmp_path / "nav", episodes=1)
    path, n = view_episode(tmp_path / "nav", 0, tmp_path / "nav.mp4")
    import cv2

    assert int(cv2.VideoCapture(str(path)).get(cv2.CAP_PROP_FRAME_COUNT)) == n


def test_existing_non_dataset_folder_is_refused(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(DatasetError, match="not an empty folder"):
        RecordEpisodes(gymnasium.make(GUI), tmp_path / "x")
    assert (tmp_path / "x" / "notes.txt").read_text() == "mine"
    shutil.rmtree(tmp_path / "x")


@pytest.mark.filterwarnings("ignore::UserWarning")  # "env is wrapped": that is the point here
@pytest.mark.parametrize("env_id", [GUI, NAV])
def test_recorded_env_still_passes_check_env(env_id, tmp_path):
    from gymnasium.utils.env_checker import check_env

    env = RecordEpisodes(gymnasium.make(env_id).unwrapped, tmp_path / "x")
    # close check skipped: it re-makes the env from its spec, which would record elsewhere
    check_env(env, skip_render_check=True, skip_close_check=True)
    env.close()
    EpisodeDataset(tmp_path / "x")  # whatever check_env finished is a valid dataset
