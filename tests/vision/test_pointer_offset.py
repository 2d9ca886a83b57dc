"""The pointer head's in-cell offset (issue 53, ``pointer_offset``): a target smaller than an
image cell may hold no cell's centre, so a click at the right cell's centre misses it; the offset
says where in the chosen cell to click. Its aim lands inside such boxes, a new offset changes no
click (it starts at the centre), SFT teaches it to hit a box the centre misses, on-policy GRPO
keeps ratio 1 and KL 0, it saves and reloads with the head, and its errors. Tiny models from
config."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.rl.grpo import GRPOConfig, grpo_update
from pixelrl.rl.sft import sft_step
from pixelrl.rl.text.rows import Example, Prompt
from pixelrl.vision.pointer_head import (
    HEAD_FILE,
    POINTER_TOKEN,
    Cells,
    PointerError,
    box_target,
    cell_point,
    offset_target,
    save_head,
)
from pixelrl.vision.vlm import load_vlm

SCREEN = (320, 240)
TARGET = f"click(start_box='{POINTER_TOKEN}')"
VISION = {"image_size": 64, "patch_size": 4, "scale_factor": 2}  # 8x8 cells of 40x30 screen px
# 12x12 px, inside cell (1, 1) = [40, 80) x [30, 60), and no cell's centre (20 + 40i, 15 + 30j)
SMALL_BOX = (44, 47, 56, 59)


def _codec():
    return GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)


def _policy(**kwargs):
    torch.manual_seed(0)
    return load_vlm("tiny-smolvlm", _codec(), seed=0, vision_size=VISION, pointer_head=True,
                    **kwargs)  # fmt: skip


def _grid(rows: int, cols: int, size=SCREEN) -> Cells:
    w, h = size[0] / cols, size[1] / rows
    boxes = [(c * w, r * h, (c + 1) * w, (r + 1) * h) for r in range(rows) for c in range(cols)]
    return Cells(np.arange(rows * cols), np.array(boxes))


def _screen(box) -> np.ndarray:
    """A black screen with a white square where ``box`` is."""
    screen = np.zeros((SCREEN[1], SCREEN[0], 3), np.uint8)
    x0, y0, x1, y1 = box
    screen[y0:y1, x0:x1] = 255
    return screen


def _inside(point, box) -> bool:
    return box[0] <= point[0] < box[2] and box[1] <= point[1] < box[3]


def _clicks(policy, screens, instruction="Click the square."):
    out = policy.generate(screens, [instruction] * len(screens), do_sample=False,
                          screen_size=SCREEN)  # fmt: skip
    return [(g[0].text, g[0].patch, (g[0].action.x, g[0].action.y)) for g in out]


# -- the aim ----------------------------------------------------------------------------------
@pytest.mark.parametrize("grid", [(14, 14), (8, 8), (17, 23)])
def test_the_aim_in_the_most_likely_cell_lands_inside_boxes_smaller_than_a_cell(grid):
    cells = _grid(*grid)
    rng = np.random.default_rng(0)
    missed_by_the_centre = 0
    for _ in range(300):
        w, h = rng.integers(6, 41, size=2)
        x0, y0 = rng.integers(0, SCREEN[0] - w), rng.integers(0, SCREEN[1] - h)
        box = (int(x0), int(y0), int(x0 + w), int(y0 + h))
        best = int(box_target(cells, box).argmax())
        aim = offset_target(cells, box)[best]
        assert _inside(cell_point(cells, best, SCREEN, aim), box), (box, best, aim)
        missed_by_the_centre += not _inside(cell_point(cells, best, SCREEN), box)
    assert missed_by_the_centre > 30  # the boxes the offset is for were among them


def test_a_cell_well_inside_the_box_keeps_its_centre_and_the_default_is_the_centre():
    cells = _grid(8, 8)  # 40x30 cells
    aim = offset_target(cells, (0, 0, 320, 240))
    assert np.allclose(aim, 0.5)
    for index in (0, 9, 63):
        x0, y0, x1, y1 = cells.boxes[index]
        assert cell_point(cells, index, SCREEN) == (int((x0 + x1) / 2), int((y0 + y1) / 2))


# -- the policy -------------------------------------------------------------------------------
def test_a_new_offset_changes_no_click():
    policy = _policy()
    screens = [_screen(SMALL_BOX), _screen((200, 100, 260, 160))]
    before = _clicks(policy, screens)
    policy._attach_offset()
    assert policy.pointer.offset is not None
    assert _clicks(policy, screens) == before


@pytest.fixture(scope="module")
def trained():
    """A pointer policy with the offset after SFT on one screen whose target (12x12 px) holds
    no cell's centre, and one without it trained the same way."""
    screen = _screen(SMALL_BOX)
    runs = {}
    for offset in (False, True):
        policy = _policy(pointer_offset=offset)
        opt = torch.optim.AdamW(policy.trainable_parameters(), lr=3e-3)
        policy.model.train()
        for _ in range(40):
            sft_step(policy, opt, [Example(Prompt(screen, "Click the square."), TARGET,
                                           box=SMALL_BOX)])  # fmt: skip
        policy.model.eval()
        runs[offset] = policy
    return runs, screen


def test_sft_teaches_the_offset_to_hit_a_box_the_centre_misses(trained):
    runs, screen = trained
    ((_, cell, point),) = _clicks(runs[False], [screen])
    ((_, cell_offset, point_offset),) = _clicks(runs[True], [screen])
    assert cell == cell_offset == 9  # both learned the right cell: row 1, column 1
    assert point == (60, 45) and not _inside(point, SMALL_BOX)  # its centre
    assert _inside(point_offset, SMALL_BOX), point_offset


def test_on_policy_grpo_with_the_offset_has_ratio_1_and_kl_0(trained):
    runs, screen = trained
    policy = runs[True]
    ref = policy.frozen_copy()
    assert ref.pointer.offset is not policy.pointer.offset
    torch.manual_seed(1)
    (group,) = policy.generate([screen], ["Click the square."], num_samples=4, screen_size=SCREEN)
    shots, words = [screen] * 4, ["Click the square."] * 4
    old = policy.score(shots, words, group).logprobs.detach()
    opt = torch.optim.SGD(policy.trainable_parameters(), lr=0.1)
    stats = grpo_update(policy, opt, shots, words, group, np.array([1.0, -1.0, 0.5, -0.5]), old,
                        ref_policy=ref, config=GRPOConfig(kl_coef=0.1))  # fmt: skip
    assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)


def test_a_saved_model_reloads_its_offset_and_clicks_the_same_points(trained, tmp_path):
    runs, screen = trained
    policy = runs[True]
    policy.save(tmp_path / "m")
    again = load_vlm(str(tmp_path / "m"), _codec())  # the head file's offset turns it on
    assert torch.equal(again.pointer.offset.weight, policy.pointer.offset.weight)
    screens = [screen, _screen((200, 100, 212, 112))]
    assert _clicks(again, screens) == _clicks(policy, screens)


# -- errors -----------------------------------------------------------------------------------
def test_the_offset_needs_the_pointer_head():
    with pytest.raises(PointerError, match="pointer_offset: .* no pointer head"):
        load_vlm("tiny-smolvlm", _codec(), vision_size=VISION, pointer_offset=True)


def test_a_head_file_with_an_offset_of_the_wrong_shape_is_refused(tmp_path):
    policy = _policy(pointer_offset=True)
    policy.save(tmp_path / "m")
    head = policy.pointer
    head.offset = torch.nn.Linear(3, 2)  # hostile: not 2 x hidden inputs
    save_head(head, tmp_path / "m")
    with pytest.raises(PointerError, match="offset.weight"):
        load_vlm(str(tmp_path / "m"), _codec())
    (tmp_path / "m" / HEAD_FILE).unlink()
