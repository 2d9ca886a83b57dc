"""The attention pointer head of VLMPolicy (issue 53 item 1, GUI-Actor): the map from image
tokens to screen boxes, pointing answers, their save and reload, SFT and GRPO through the head,
and its errors. Tiny models built from config, 64-px images: a few seconds each."""

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
    PointerError,
    PointerHead,
    box_target,
    image_cells,
    save_head,
)
from pixelrl.vision.vlm import load_vlm

SCREEN = (320, 240)
TARGET = f"click(start_box='{POINTER_TOKEN}')"
VISION = {  # 8x8 = 64 cells (SmolVLM: 64-px squares, 4-px patches, 2x2 shuffle); Qwen: 8x6 cells
    "smolvlm": {"image_size": 64, "patch_size": 4, "scale_factor": 2},
    "qwen2_5_vl": {"max_pixels": 64 * 48, "patch_size": 4},
}
BOX = (200, 150, 320, 240)  # what the trained policy learns to click into


def _codec():
    return GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)


def _policy(family: str, **kwargs):
    return load_vlm(f"tiny-{family}", _codec(), seed=0, vision_size=VISION[family], **kwargs)


def _screen(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 255, (SCREEN[1], SCREEN[0], 3), dtype=np.uint8)


def _examples(image) -> list[Example]:
    return [Example(Prompt(image, word), TARGET, box=BOX) for word in ["left", "right"]]


def _head_weights(policy) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in policy.pointer.parameters()])


@pytest.fixture(scope="module", params=["smolvlm", "qwen2_5_vl"])
def trained(request):
    """A pointer policy after 40 SFT steps on one box, and the SFT losses on the way."""
    torch.manual_seed(0)
    policy = _policy(request.param, pointer_head=True)
    before = _head_weights(policy)
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=3e-3)
    image = _screen()
    policy.model.train()
    losses = [sft_step(policy, opt, _examples(image)) for _ in range(40)]
    policy.model.eval()
    return request.param, policy, image, losses, before


@pytest.mark.parametrize("family", ["smolvlm", "qwen2_5_vl", "qwen2_vl"])
def test_cells_tile_the_screen_row_by_row(family):
    vision = VISION.get(family, VISION["qwen2_5_vl"])
    policy = load_vlm(f"tiny-{family}", _codec(), vision_size=vision)
    batch = policy.encode_prompts([_screen(), _screen(1)[:200]], ["a", "bb"])
    for row, size in enumerate([SCREEN, (320, 200)]):
        cells = image_cells(family, batch, row, size, policy.processor,
                            policy.model.config.image_token_id)  # fmt: skip
        ids = batch["input_ids"][row]
        assert len(cells.positions) == int((ids == policy.model.config.image_token_id).sum())
        b = cells.boxes
        area = ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])).sum()
        assert area == pytest.approx(size[0] * size[1])  # no gaps, no overlaps (one image)
        assert b.min() == 0 and b[:, 2].max() == pytest.approx(size[0])
        assert b[1, 0] == pytest.approx(b[0, 2]) and b[1, 1] == 0  # row-major
    if family != "smolvlm":  # the smart-resized grid: image_grid_thw's (h/2) x (w/2)
        _, h, w = batch["image_grid_thw"][-1].tolist()
        assert len(cells.positions) == (h // 2) * (w // 2)


def test_split_smolvlm_images_map_tiles_then_the_global_image():
    policy = _policy("smolvlm")
    processor = policy.processor
    processor.image_processor.do_image_splitting = True
    processor.image_processor.size = {"longest_edge": 128}  # 2x2 tiles of 64 px, then global
    batch = policy.encode_prompts([_screen()], ["a"])
    cells = image_cells("smolvlm", batch, 0, SCREEN, processor, policy.model.config.image_token_id)
    per_image = processor.image_seq_len
    assert len(cells.positions) == 5 * per_image
    first_tile, global_image = cells.boxes[:per_image], cells.boxes[-per_image:]
    assert first_tile[:, 2].max() == pytest.approx(160) and first_tile[:, 3].max() == pytest.approx(
        120
    )
    assert global_image[:, 2].max() == pytest.approx(320) and global_image[
        :, 3
    ].max() == pytest.approx(240)
    tokens = processor.tokenizer.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    assert "<row_2_col_2>" in tokens and "<global-img>" in tokens


def test_box_target_spreads_over_the_cells_whose_centre_is_inside():
    policy = _policy("smolvlm")
    batch = policy.encode_prompts([_screen()], ["a"])
    cells = image_cells("smolvlm", batch, 0, SCREEN, policy.processor,
                        policy.model.config.image_token_id)  # fmt: skip
    target = box_target(cells, (0, 0, 80, 60))  # 8x8 cells of 40x30 px: the top-left 2x2
    assert target.sum() == pytest.approx(1) and (target > 0).sum() == 4
    assert target[[0, 1, 8, 9]] == pytest.approx([0.25] * 4)
    tiny = box_target(cells, (35, 25, 45, 35))  # inside no cell's centre: the overlapped four
    assert (tiny > 0).sum() == 4
    with pytest.raises(PointerError, match="off the screen"):
        box_target(cells, (400, 300, 420, 310))


def test_sft_through_the_head_lowers_the_loss_and_trains_the_head(trained):
    family, policy, _, losses, before = trained
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), (family, losses)
    assert not torch.equal(before, _head_weights(policy))


def test_a_pointing_answer_clicks_a_cell_centre_inside_its_box(trained):
    family, policy, image, _, _ = trained
    out = policy.generate([image, image], ["left", "right"], do_sample=False, screen_size=SCREEN)
    for (c,), word in zip(out, ["left", "right"]):
        assert c.parsed and c.patch is not None and policy.pointer_id in c.token_ids, c
        assert c.action.kind == "click"
        x, y = c.action.x, c.action.y
        assert BOX[0] <= x < BOX[2] and BOX[1] <= y < BOX[3], (family, c.text)
        assert POINTER_TOKEN not in c.text
        # the sampled log-prob holds the cell's: score gives it back
        scored = policy.score([image], [word], [c])  # (generate's cache: float noise apart)
        assert float(scored.sequence_logprobs[0].detach()) == pytest.approx(c.logprob, abs=1e-3)


def test_a_saved_pointer_model_reloads_and_clicks_the_same_points(trained, tmp_path):
    family, policy, image, _, _ = trained
    policy.save(tmp_path / "m")
    assert (tmp_path / "m" / HEAD_FILE).is_file()
    again = load_vlm(str(tmp_path / "m"), _codec())
    assert again.pointer is not None and again.pointer_id == policy.pointer_id
    shots, words = [image, _screen(3)], ["left", "right"]
    a = policy.generate(shots, words, do_sample=False, screen_size=SCREEN)
    b = again.generate(shots, words, do_sample=False, screen_size=SCREEN)
    assert [(c[0].text, c[0].patch) for c in a] == [(c[0].text, c[0].patch) for c in b]


def test_on_policy_grpo_through_the_head_has_ratio_1_and_kl_0(trained):
    family, policy, image, _, _ = trained
    ref = policy.frozen_copy()
    torch.manual_seed(1)
    groups = policy.generate([image, image], ["left", "right"], num_samples=4, screen_size=SCREEN)
    rows = [c for g in groups for c in g]
    assert sum(c.patch is not None for c in rows) >= 4, [c.text for c in rows]
    shots, words = [image] * 8, ["left"] * 4 + ["right"] * 4
    before = _head_weights(policy)
    old = policy.score(shots, words, rows).logprobs.detach()
    opt = torch.optim.SGD(policy.trainable_parameters(), lr=0.1)
    advantages = np.array([1.0, -1.0, 0.5, -0.5] * 2)
    stats = grpo_update(policy, opt, shots, words, rows, advantages, old, ref_policy=ref,
                        config=GRPOConfig(kl_coef=0.1))  # fmt: skip
    assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)
    assert not torch.equal(before, _head_weights(policy)), family  # the cells' log-probs learn


# -- errors -----------------------------------------------------------------------------------
def test_a_model_without_a_screen_map_cannot_have_the_head():
    with pytest.raises(PointerError, match="'llava' model has no map"):
        load_vlm("tiny-llava", _codec(), pointer_head=True)


def test_a_pointer_token_without_the_head_is_refused(tmp_path):
    policy = _policy("smolvlm", pointer_head=True)
    policy.save(tmp_path / "m")
    (tmp_path / "m" / HEAD_FILE).unlink()
    with pytest.raises(PointerError, match="pointer token .* but the policy has no pointer head"):
        load_vlm(str(tmp_path / "m"), _codec())
    plain = _policy("smolvlm")
    with pytest.raises(PointerError, match="no pointer head"):
        plain.score([_screen()], ["a"], ["click(start_box='(1,2)')"], pointer_boxes=[BOX])


def test_a_head_file_of_another_shape_is_refused(tmp_path):
    policy = _policy("smolvlm", pointer_head=True)
    policy.save(tmp_path / "m")
    save_head(PointerHead(32), tmp_path / "m")  # the model's hidden size is 64
    with pytest.raises(PointerError, match="do not fit a language model of hidden size 64"):
        load_vlm(str(tmp_path / "m"), _codec())
    (tmp_path / "m" / HEAD_FILE).write_bytes(b"\x00" * 40)
    with pytest.raises(PointerError, match="not a pointer head file"):
        load_vlm(str(tmp_path / "m"), _codec())


def test_a_pointing_completion_without_its_cell_or_box_cannot_be_scored():
    policy = _policy("smolvlm", pointer_head=True)
    with pytest.raises(PointerError, match="neither its cell"):
        policy.score([_screen()], ["a"], [TARGET])


def test_the_head_trains_whole_under_lora(tmp_path):
    pytest.importorskip("peft")
    policy = _policy("smolvlm", pointer_head=True)
    policy.add_lora(r=2, alpha=4)
    trainable = {id(p) for p in policy.trainable_parameters()}
    assert all(id(p) in trainable for p in policy.pointer.parameters())
    before = _head_weights(policy)
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    sft_step(policy, opt, _examples(_screen()))
    assert not torch.equal(before, _head_weights(policy))
    policy.save(tmp_path / "m")  # adapters merged in, the head beside them
    again = load_vlm(str(tmp_path / "m"), _codec())
    assert torch.equal(_head_weights(again), _head_weights(policy))
