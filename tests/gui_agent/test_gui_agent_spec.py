"""A GUI VLM model folder says how its answers are written and what its prompt showed
(``pixelrl_gui_agent.json``, :mod:`pixelrl.gui_agent.agent_spec`): a ``gui/*`` recipe writes it,
``load_agent`` (``pixelrl eval``) acts as trained without flags (before, a pyautogui model was read
as UI-TARS and every answer refused), a folder without it loads as before, and a hostile file is
one error line. Tiny models from config."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from pixelrl.envs.gui_action import Action
from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.gui_agent.agent_spec import GUI_AGENT_FILE, save_gui_agent
from pixelrl.gui_agent.agents import load_agent
from pixelrl.vision.vlm import load_vlm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pixelrl"))
from cli_forks import assert_one_error_line, run_cases  # noqa: E402

SCREEN = (320, 240)


def _saved(folder: Path, codec: GUIActionCodec, **kwargs) -> Path:
    torch.manual_seed(0)
    policy = load_vlm("tiny-qwen2_vl", codec, seed=0, **kwargs)
    return save_gui_agent(policy, folder, 17)


def test_a_pyautogui_model_is_read_as_pyautogui(tmp_path):
    folder = _saved(tmp_path / "m", GUIActionCodec("pyautogui"))
    spec = json.loads((folder / GUI_AGENT_FILE).read_text())
    assert spec["action_format"] == "pyautogui" and spec["screen_parse"] is False
    agent = load_agent(folder)
    assert agent.vlm.codec.action_format == "pyautogui" and agent.vlm.screen_parse is None
    action, error = agent.vlm.codec.parse("pyautogui.click(x=10, y=20)", SCREEN)
    assert error is None and (action.x, action.y) == (10, 20)


def test_a_folder_without_the_file_loads_as_before(tmp_path):
    folder = _saved(tmp_path / "m", GUIActionCodec("pyautogui"))
    (folder / GUI_AGENT_FILE).unlink()
    assert load_agent(folder).vlm.codec.action_format == "uitars"  # the default it always had


def test_a_screen_parse_and_marks_come_back_with_their_settings(tmp_path):
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    from pixelrl.vision.reader import SetOfMarks

    codec = GUIActionCodec("uitars", "pixels", mark_actions=True)
    folder = _saved(tmp_path / "m", codec, screen_parse=SetOfMarks(codec.point_text, max_words=17))
    agent = load_agent(folder)
    assert agent.vlm.codec.mark_actions and agent.vlm.codec.coordinates.name == "pixels"
    assert isinstance(agent.vlm.screen_parse, SetOfMarks) and agent.vlm.screen_parse.max_words == 17
    assert agent.vlm.codec.render(Action.click(5, 6), SCREEN) == "click(start_box='(5,6)')"


def test_the_recipe_writes_the_file(tmp_path):
    from pixelrl.gui_agent.train_vlm import config_for, train
    from pixelrl.recipes import get_recipe

    cfg = config_for(get_recipe("gui/sft").config, [
        "torch_threads=1", "action_format=pyautogui", "sft.steps=1", "data.episodes=1",
        "eval.interval=0", "eval.grounding_items=2", "env.families=[click-button]",
        f"train.output_dir={tmp_path / 'run'}", "train.progress=false",
    ])  # fmt: skip
    cfg.recipe = "gui/sft"
    train(cfg)
    spec = json.loads((tmp_path / "run" / "model" / GUI_AGENT_FILE).read_text())
    assert spec == {"action_format": "pyautogui", "coordinates": None, "mark_actions": False,
                    "screen_parse": False, "screen_words": 40}  # fmt: skip


HOSTILE = [
    ("not-json", "{nope", "not json"),
    ("a-list", "[1, 2]", "not a json object"),
    ("unknown-field", '{"action_format": "uitars", "run": "rm -rf /"}', "unknown field(s) run"),
    ("evil-format", '{"action_format": "evil"}', "action_format 'evil'; known:"),
    ("huge-words", '{"screen_parse": true, "screen_words": 1000000000}', "screen_words must be"),
    ("words-bool", '{"screen_words": true}', "screen_words must be"),
    ("parse-text", '{"screen_parse": "yes"}', "screen_parse must be true or false"),
    ("marks-alone", '{"mark_actions": true}', "mark_actions needs screen_parse"),
    ("bad-space", '{"coordinates": "furlongs"}', "coordinates must be one of"),
    ("toolcall-marks", '{"action_format": "toolcall", "coordinates": "pixels", '
     '"screen_parse": true, "mark_actions": true}', "toolcall' has no mark actions"),
    ("too-big", " " * 70_000 + "{}", "bytes (at most"),
]  # fmt: skip


@pytest.fixture(scope="module")
def hostile_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    plain = _saved(root / "plain", GUIActionCodec())
    folders = {}
    for name, text, _ in HOSTILE:
        folder = root / name
        folder.mkdir()
        for f in plain.iterdir():
            (folder / f.name).symlink_to(f)
        (folder / GUI_AGENT_FILE).unlink()
        (folder / GUI_AGENT_FILE).write_text(text)
        folders[name] = folder
    return folders


@pytest.mark.parametrize("name, text, expected", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_spec_is_one_error(hostile_folders, name, text, expected):
    from pixelrl.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="pixelrl_gui_agent.json") as caught:
        load_agent(hostile_folders[name])
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_pixelrl_eval_of_a_hostile_spec_is_one_error_line(hostile_folders, tmp_path):
    argv = ["eval", "--policy", str(hostile_folders["unknown-field"]), "--grounding", "2"]
    results = run_cases([("eval-hostile-spec", argv)], tmp_path)
    assert_one_error_line(results["eval-hostile-spec"], argv, "unknown field(s) run")
