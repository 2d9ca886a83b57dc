"""The screen reader in the pointer policy's view (issue 41 item 4): the read maps say where the
instruction's words are drawn, from pixels; a screen is re-read only when it changed; the policy
and behaviour cloning take the maps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pixelrl.envs.gui_action import Action
from pixelrl.gui_agent import ppo_task
from pixelrl.gui_agent.pointer_env import PointerSpec
from pixelrl.gui_agent.read_maps import ReadMaps, instruction_tokens, paint
from pixelrl.train import config_for
from pixelrl.vision.image import resize
from pixelrl.vision.reader import Word

SCREEN = [320, 240]


def _env(family: str = "ClickButton"):
    cfg = config_for("gui/ppo", [f"env.kwargs.screen_size={SCREEN}",
                                 f"env.id=pixelrl/Desktop-{family}-v0", "policy.reader=true"])  # fmt: skip
    spec = ppo_task.pointer_spec(cfg)
    return ppo_task.make_env(cfg.env.id, spec, "train", **ppo_task.env_kwargs(cfg, "train"))


def test_instruction_tokens_drop_quotes_punctuation_and_short_words():
    text = "Select mY8, W9Fw3W and click \u201cSubmit\u201d. A"
    assert instruction_tokens(text) == ["Select", "mY8", "W9Fw3W", "and", "click", "Submit"]
    hostile = " ".join(f"w{i}" for i in range(100_000))  # untrusted text: its length is bounded
    assert len(instruction_tokens(hostile)) == 32


def test_paint_marks_named_words_and_all_text_in_image_pixels():
    screen = np.zeros((100, 200, 3), dtype=np.uint8)
    _, image_map = resize(screen, (100, 50))  # half size
    words = [Word("Subrnit", (20, 10, 60, 20), 0.9), Word("Cancel", (100, 40, 140, 50), 0.9),
             Word("0K", (150, 80, 170, 90), 0.9)]  # fmt: skip
    maps = paint(words, ["Submit", "OK"], image_map, (100, 50))
    assert maps.shape == (50, 100, 2) and maps.dtype == np.uint8
    named, text = maps[..., 0], maps[..., 1]
    assert named[5:10, 10:30].min() > 0.75 * 255  # "Subrnit": OCR's rn for m still names Submit
    assert named[40:45, 75:85].min() == 255  # "0K" is "OK" after the 0/O merge
    assert named[20:25, 50:70].max() == 0  # "Cancel" is not named ...
    assert text[20:25, 50:70].min() == 255  # ... but it is text
    assert named.sum() and text[30:40, 0:40].max() == 0  # nothing where nothing is written


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_read_map_finds_the_named_button_on_a_real_screen():
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    env = _env("ClickButton")
    try:
        hits = 0
        for seed in range(3):
            obs, info = env.reset(seed=seed)
            assert set(obs) == {"image", "instruction", "read"}
            named = obs["read"][..., 0]
            x0, y0, x1, y1 = info["target_bbox"]  # privileged: the test's check, never the policy's
            (ix0, iy0), (ix1, iy1) = env.image_map.to_image(np.array([[x0, y0], [x1, y1]]))
            inside = named[int(iy0) : int(np.ceil(iy1)), int(ix0) : int(np.ceil(ix1))]
            hits += int(inside.max() > 0.75 * 255)
            assert obs["read"][..., 1].max() == 255
        assert hits >= 2, hits
    finally:
        env.close()


def test_a_screen_is_read_again_only_when_it_changed_enough():
    class CountingReader:
        calls = 0

        def read(self, image):
            CountingReader.calls += 1
            return [Word("Submit", (10, 10, 40, 20), 1.0)]

    maps = ReadMaps(CountingReader())
    screen = np.full((120, 160, 3), 200, dtype=np.uint8)
    _, image_map = resize(screen, (160, 120))
    first = maps(screen, "Click Submit", image_map, (160, 120))
    ticked = screen.copy()
    ticked[50:60, 50:60] = 0  # a ticked box: 0.5% of the pixels
    assert np.array_equal(maps(ticked, "Click Submit", image_map, (160, 120)), first)
    assert CountingReader.calls == 1
    opened = screen.copy()
    opened[20:80, 20:120] = 0  # a dialog: 31% of the pixels
    maps(opened, "Click Submit", image_map, (160, 120))
    assert CountingReader.calls == 2
    maps.forget()  # a new episode reads whatever the screen shows
    maps(opened, "Click Submit", image_map, (160, 120))
    assert CountingReader.calls == 3


def test_the_policy_uses_the_read_maps():
    from pixelrl.gui_agent.pointer_policy import PointerPolicy

    spec = PointerSpec(image_size=(160, 120), kinds=("click",), reader=True)
    policy = PointerPolicy(spec, match_heads=2)
    torch.manual_seed(0)
    for p in policy.parameters():  # (zero-initialised heads would hide any input)
        torch.nn.init.normal_(p, std=0.1)
    obs = {"image": torch.zeros(1, 120, 160, 3, dtype=torch.uint8),
           "instruction": torch.ones(1, spec.max_words, dtype=torch.int64),
           "read": torch.zeros(1, 120, 160, 2, dtype=torch.uint8)}  # fmt: skip
    with torch.no_grad():
        before = policy.heads(obs)["cell"].clone()
        obs["read"][0, 40:48, 80:96, 0] = 255
        after = policy.heads(obs)["cell"]
    assert not torch.allclose(before, after)
    cells = (after - before).abs().reshape(-1)
    cols, _ = spec.grid
    row, col = divmod(int(cells.argmax()), cols)
    assert row in (4, 5, 6) or col in (9, 10, 11, 12)  # on the marked cells' row or columns


def test_behaviour_cloning_takes_the_read_maps():
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    from pixelrl.gui_agent.pointer_bc import accuracy, behaviour_clone, expert_samples
    from pixelrl.gui_agent.pointer_policy import PointerPolicy

    env = _env("ClickButton")
    try:
        data = expert_samples(env, 6, seed=0)
        assert data["read"].shape == (6, *env.observation_space["read"].shape)
        policy = PointerPolicy.from_spaces(
            env.observation_space, env.action_space, env.pointer_spec, match_heads=2
        )
        losses = behaviour_clone(policy, data, steps=3, batch_size=4)
        assert len(losses) == 3 and all(np.isfinite(losses))
        assert set(accuracy(policy, data)) == {"kind", "cell"}
        env.step_action(Action.wait())  # an unchanged screen: no new read
    finally:
        env.close()


def test_a_pointer_agent_of_a_reading_policy_reads_what_it_sees():
    pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
    from pixelrl.gui_agent.agents import PointerAgent
    from pixelrl.gui_agent.pointer_policy import PointerPolicy

    env = _env("ClickButton")
    try:
        policy = PointerPolicy.from_spaces(
            env.observation_space, env.action_space, env.pointer_spec, match_heads=2
        )
        agent = PointerAgent(policy)
        obs, info = env.reset(seed=0)
        screenshot, instruction = env.last_screenshot, env.unwrapped.instruction
        agent.reset()
        assert agent.act(screenshot, instruction).kind in ("click", "type", "key")
        assert len(agent.read_maps) == 1 and agent.read_maps[0].reads == 1
        agent.act(screenshot, instruction)  # the same screen: not read again
        assert agent.read_maps[0].reads == 1
        agent.reset()  # a new episode reads its first screen
        agent.act(screenshot, instruction)
        assert agent.read_maps[0].reads == 2
    finally:
        env.close()
