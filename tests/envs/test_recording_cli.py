"""`pixelrl record / replay / view`, and interop (LeRobot v3 export, OSWorld import)."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pyarrow.parquet as pq
import pytest
import recording_toy_env  # noqa: F401  (registers pixelrl/RecordingToy*)

from pixelrl.cli import main
from pixelrl.envs.gui_action import Action
from pixelrl.envs.recording import DatasetError, EpisodeDataset, replay_dataset


def test_record_replay_view_commands(tmp_path, capsys):
    out = tmp_path / "demos"
    argv = ["record", "--env", "pixelrl/RecordingToyGUI-v0", "--agent", "expert", "--episodes", "3"]
    assert main(argv + ["--out", str(out), "--seed", "4"]) == 0
    printed = capsys.readouterr().out
    assert "3 episodes written" in printed and "success rate 100%" in printed
    data = EpisodeDataset(out)
    assert [e.seed for e in data.episodes.values()] == [4, 5, 6]

    assert main(argv[:-1] + ["2", "--out", str(out), "--seed", "7", "--resume"]) == 0
    assert len(EpisodeDataset(out)) == 5

    assert main(["replay", str(out)]) == 0
    table = capsys.readouterr().out
    assert "5/5 episodes replay exactly" in table and "100.0%" in table

    gif = tmp_path / "ep.gif"
    assert main(["view", str(out), "--episode", "1", "--out", str(gif)]) == 0
    assert f"wrote {gif} (2 frames)" in capsys.readouterr().out

    # a second recorder on the same folder is refused while the first holds it
    from pixelrl.envs.recording import RecordEpisodes

    holder = RecordEpisodes(gymnasium.make("pixelrl/RecordingToyGUI-v0"), out, resume=True)
    assert main(argv + ["--out", str(out), "--resume"]) == 2
    assert "pixelrl record: error: another process is recording" in capsys.readouterr().err
    holder.close()
    assert main(["replay", str(out), "--episode", "9"]) == 2
    assert "no (loadable) episode [9]" in capsys.readouterr().err

    # a diverging episode: replay exits non-zero and names it
    path = out / "data/chunk-000/episode_000002.parquet"
    table = pq.read_table(path)
    table = table.set_column(table.schema.get_field_index("reward"), "reward", [[0.5]])
    pq.write_table(table, path)
    assert main(["replay", str(out)]) == 1
    assert "4/5 episodes replay exactly" in capsys.readouterr().out


def test_record_random_and_checkpoint(tmp_path, capsys):
    out = tmp_path / "nav"
    argv = ["record", "--env", "pixelrl/RecordingToyNav-v0", "--agent", "random", "--episodes", "2"]
    assert main(argv + ["--out", str(out)]) == 0
    assert all(r.ok for r in replay_dataset(out))
    base = ["record", "--env", "pixelrl/RecordingToyNav-v0", "--out", str(tmp_path / "c")]
    assert main(base + ["--agent", "checkpoint", str(tmp_path / "x.pt")]) == 2
    assert f"no such checkpoint: {tmp_path / 'x.pt'}" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: usage and one error line
        main(base + ["--agent", "checkpoint"])
    assert "--agent checkpoint PATH" in capsys.readouterr().err


def test_export_lerobot_v3_layout(tmp_path):
    from pixelrl.envs.recording.interop import export_lerobot

    main(
        [
            "record",
            "--env",
            "pixelrl/RecordingToyGUI-v0",
            "--episodes",
            "2",
            "--out",
            str(tmp_path / "g"),
        ]
    )
    src = EpisodeDataset(tmp_path / "g")
    out = export_lerobot(tmp_path / "g", tmp_path / "lr")
    info = json.loads((out / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 2
    assert info["total_frames"] == src.num_steps
    frames = pq.read_table(out / "data/chunk-000/file-000.parquet").to_pylist()
    assert [r["index"] for r in frames] == list(range(src.num_steps))
    from io import BytesIO

    from PIL import Image

    png = frames[0]["observation.images.screenshot"]["bytes"]
    assert np.array_equal(np.asarray(Image.open(BytesIO(png))), src.frame(0, 0))  # lossless
    first = Action.click(*[int(v) for v in frames[0]["action"][1:3]])
    assert frames[0]["action_text"] == f"pyautogui.click(x={first.x}, y={first.y})"
    episodes = pq.read_table(out / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [(e["dataset_from_index"], e["dataset_to_index"]) for e in episodes] == [
        (0, src.episodes[0].length),
        (src.episodes[0].length, src.num_steps),
    ]
    tasks = pq.read_table(out / "meta/tasks.parquet").to_pylist()
    assert tasks[0]["task"].startswith("click the red box")

    main(
        [
            "record",
            "--env",
            "pixelrl/RecordingToyNav-v0",
            "--episodes",
            "2",
            "--out",
            str(tmp_path / "n"),
        ]
    )
    out = export_lerobot(tmp_path / "n", tmp_path / "lrn")
    info = json.loads((out / "meta/info.json").read_text())
    assert info["features"]["observation.images.rgb"]["dtype"] == "video"
    assert (out / "videos/observation.images.rgb/chunk-000/file-000.mp4").is_file()


def test_import_osworld_trajectory(tmp_path):
    from PIL import Image

    from pixelrl.envs.recording.interop import import_osworld
    from pixelrl.envs.recording.training import GUIStepDataset

    traj = tmp_path / "osworld_task"
    traj.mkdir()
    screens = [np.full((48, 64, 3), 40 * i, np.uint8) for i in range(4)]
    Image.fromarray(screens[0]).save(traj / "initial_state.png")
    steps = [
        "import pyautogui\npyautogui.click(10, 20)\npyautogui.write('hello')",
        "pyautogui.moveTo(5, 5); pyautogui.dragTo(30, 40)",
        "__import__('os').system('rm -rf /')",  # never executed: kept as text, not an action
        "DONE",
    ]
    lines = []
    for k, code in enumerate(steps, start=1):
        name = f"step_{k}_20240101@000000.png"
        Image.fromarray(screens[min(k, 3)]).save(traj / name)
        lines.append(
            json.dumps(
                {
                    "step_num": k,
                    "action": code,
                    "reward": 1.0 if k == 4 else 0.0,
                    "done": k == 4,
                    "screenshot_file": name,
                }
            )
        )
    (traj / "traj.jsonl").write_text("\n".join(lines) + "\n")
    entry = import_osworld(traj, tmp_path / "ds", instruction="say hello")
    assert entry.length == 5 and entry.success
    data = EpisodeDataset(tmp_path / "ds")
    rows = data.steps(0)
    assert list(rows["action"]) == [
        "pyautogui.click(x=10, y=20)",
        "pyautogui.write('hello')",
        "pyautogui.moveTo(x=5, y=5); pyautogui.dragTo(x=30, y=40)",
        "__import__('os').system('rm -rf /')",
        "DONE",
    ]
    # the screen before each action: two actions of step 1 both see the initial screen
    assert [int(data.frame(0, t)[0, 0, 0]) for t in range(6)] == [0, 0, 40, 80, 120, 120]
    assert len(GUIStepDataset(data)) == 4  # the unparseable step is left out for training
    with pytest.raises(DatasetError, match="before the first step"):
        (traj / "initial_state.png").unlink()
        import_osworld(traj, tmp_path / "ds2")


def test_record_with_a_checkpoint_policy(tmp_path):
    """A policy saved by the trainer's checkpoint code, rebuilt by its recipe, records episodes
    on the env options it was trained with."""
    if "pixelrl/PointNav-v0" not in gymnasium.registry:
        pytest.skip("pixelrl/PointNav-v0 is not registered yet")
    from pixelrl.checkpoint import save_checkpoint
    from pixelrl.config import Config, read_yaml
    from pixelrl.recipes import get_recipe

    recipe = get_recipe("embodied/pointnav")
    raw = read_yaml(recipe.config)
    raw["env"]["kwargs"].update(num_scenes=1, max_episode_steps=10)
    cfg = Config(raw)
    env = gymnasium.make(cfg.env.id, **cfg.env.kwargs)
    policy = recipe.load_task().make_policy(cfg, env.observation_space, env.action_space)
    env.close()
    ckpt = save_checkpoint(
        {"config": cfg.to_dict(), "policy": policy.state_dict()}, tmp_path / "c.pt"
    )
    out = tmp_path / "bc"
    argv = ["record", "--env", cfg.env.id, "--agent", "checkpoint", str(ckpt), "--episodes", "2"]
    assert main(argv + ["--out", str(out)]) == 0
    data = EpisodeDataset(out)
    assert len(data) == 2 and all(e.length <= 10 for e in data.episodes.values())
    assert data.info.env_kwargs["width"] == cfg.env.kwargs["width"]
    assert all(r.ok for r in replay_dataset(data))
