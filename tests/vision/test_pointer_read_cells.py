"""The pointer head reads what the screen reader read (issue 53, ``reader_cells``): the reader's
named/text channels pooled to each image token's screen box, mapped by the head's ``cells``
layer, added where the language model receives the image. The features land on the tokens whose
boxes hold the read word (SmolVLM's grid and tiles, Qwen's smart resize), generate and the
log-prob forward see the same ones (on-policy GRPO: ratio 1, KL 0), the layer saves and reloads
with the head, trains under LoRA, and its errors. Tiny models from config, the real reader."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pixelrl.envs.gui_action.codec import GUIActionCodec
from pixelrl.rl.grpo import GRPOConfig, grpo_update
from pixelrl.rl.sft import sft_step
from pixelrl.rl.text.rows import Example, Prompt
from pixelrl.vision.pointer_head import HEAD_FILE, POINTER_TOKEN, PointerError, save_head
from pixelrl.vision.read_cells import pool_cells
from pixelrl.vision.vlm import _language_model, load_vlm

pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")

SCREEN = (320, 240)
TARGET = f"click(start_box='{POINTER_TOKEN}')"
VISION = {  # SmolVLM: 8x8 cells of 40x30 screen px; Qwen: the smart-resized grid
    "smolvlm": {"image_size": 64, "patch_size": 4, "scale_factor": 2},
    "qwen2_5_vl": {"max_pixels": 64 * 48, "patch_size": 4},
}


def _codec():
    return GUIActionCodec.for_model("tiny-smolvlm", "uitars", None)


def _policy(family: str, **kwargs):
    return load_vlm(f"tiny-{family}", _codec(), seed=0, vision_size=VISION[family],
                    pointer_head=True, reader_cells=True, **kwargs)  # fmt: skip


def _word_screen(word: str, at: tuple[int, int], size=SCREEN) -> np.ndarray:
    """A black screen with ``word`` in white, 40-px font, its top-left corner at ``at``."""
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.new("RGB", size)
    ImageDraw.Draw(picture).text(at, word, fill=(255, 255, 255), font=ImageFont.load_default(40))
    return np.asarray(picture)


def _seen_embeddings(policy, run) -> list[torch.Tensor]:
    """The embeddings the language model receives on each pass of ``run()`` (a pre-hook after
    the reader cells' own)."""
    seen: list[torch.Tensor] = []
    handle = _language_model(policy.model).register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs["inputs_embeds"].detach().clone()),
        with_kwargs=True,
    )
    try:
        run()
    finally:
        handle.remove()
    return seen


def _grid_boxes(rows, cols, x0, y0, width, height) -> list[tuple[float, float, float, float]]:
    w, h = width / cols, height / rows
    return [(x0 + c * w, y0 + r * h, x0 + (c + 1) * w, y0 + (r + 1) * h)
            for r in range(rows) for c in range(cols)]  # fmt: skip


def _expected_boxes(family: str, batch, row: int, size, split: bool) -> np.ndarray:
    """The screen box of each image token in order, worked out from the layout each family
    documents (not from image_cells)."""
    width, height = size
    if family == "qwen2_5_vl":  # smart resize: the patch grid in image_grid_thw, 2x2 merged
        _, h, w = (int(v) for v in batch["image_grid_thw"][row])
        return np.array(_grid_boxes(h // 2, w // 2, 0, 0, width, height))
    tiles = [(r, c) for r in range(2) for c in range(2)] if split else []  # 2x2, then global
    boxes = [b for r, c in tiles for b in _grid_boxes(8, 8, c * width / 2, r * height / 2,
                                                       width / 2, height / 2)]  # fmt: skip
    return np.array(boxes + _grid_boxes(8, 8, 0, 0, width, height))


@pytest.mark.parametrize(
    "family,size,split",
    [("smolvlm", SCREEN, False), ("smolvlm", SCREEN, True), ("qwen2_5_vl", (320, 200), False)],
)
def test_a_read_word_raises_exactly_the_image_tokens_whose_boxes_hold_it(family, size, split):
    policy = _policy(family)
    if split:  # 2x2 tiles of 64 px, then the global image
        policy.processor.image_processor.do_image_splitting = True
        policy.processor.image_processor.size = {"longest_edge": 128}
    with torch.no_grad():
        policy.pointer.cells.weight.normal_()
    # two rows, their own screens, padded differently: the word top-left, then bottom-right
    screens = [_word_screen("STOP", (8, 6), size), _word_screen("HELP", (200, size[1] - 50), size)]
    instructions = ["Click STOP.", "Please click the word HELP now."]
    words = [policy.reader_cells.words(s) for s in screens]
    assert [[w.text for w in ws] for ws in words] == [["STOP"], ["HELP"]]
    batch = policy.encode_prompts(screens, instructions)
    comp, mask = policy._padded([policy.completion_ids("wait()")] * 2)
    with_cells = _seen_embeddings(
        policy, lambda: policy._logits(screens, instructions, [(), ()], comp, mask)
    )
    reader, policy.reader_cells = policy.reader_cells, None  # the same pass without them
    without = _seen_embeddings(
        policy, lambda: policy._logits(screens, instructions, [(), ()], comp, mask)
    )
    policy.reader_cells = reader
    added = (with_cells[0] - without[0]).abs().sum(-1)  # (rows, positions)
    image_token = policy.model.config.image_token_id
    both = policy.pointer.cells(torch.ones(2)).detach()  # named and text both 1
    for row in range(2):
        x0, y0, x1, y1 = words[row][0].box
        boxes = _expected_boxes(family, batch, row, size, split)
        covered = (boxes[:, 0] < x1) & (boxes[:, 2] > x0) & (boxes[:, 1] < y1) & (boxes[:, 3] > y0)
        positions = (batch["input_ids"][row] == image_token).nonzero().flatten()
        assert len(positions) == len(boxes)
        raised = (added[row] > 1e-6).nonzero().flatten()
        assert raised.tolist() == positions[torch.as_tensor(covered)].tolist(), (family, row)
        assert 0 < covered.sum() < len(boxes) / 4
        first = positions[int(np.flatnonzero(covered)[0])]
        assert torch.allclose(with_cells[0][row, first] - without[0][row, first], both, atol=1e-5)


def test_pooling_takes_the_max_over_each_box():
    maps = np.zeros((30, 40, 2), dtype=np.uint8)
    maps[13:17, 18:22, 0] = 191  # a named word straddling four 20x15 cells
    maps[13:17, 18:22, 1] = 255
    boxes = np.array(_grid_boxes(2, 2, 0, 0, 40, 30))
    pooled = pool_cells(maps, boxes)
    assert pooled.shape == (4, 2) and pooled.dtype == np.float32
    assert pooled[:, 0] == pytest.approx([0.749] * 4, abs=1e-3) and (pooled[:, 1] == 1).all()
    assert (pool_cells(maps, np.array([(30, 20, 40, 30)])) == 0).all()


@pytest.fixture(scope="module", params=["smolvlm", "qwen2_5_vl"])
def trained(request):
    """A pointer policy with reader cells after 10 SFT steps: the named word's box is the
    target, so the cells layer has something to learn from."""
    torch.manual_seed(0)
    policy = _policy(request.param)
    screens = [_word_screen("STOP", (8, 6)), _word_screen("STOP", (220, 180))]
    examples = [Example(Prompt(s, "Click STOP."), TARGET, box=b)
                for s, b in zip(screens, [(8, 6, 120, 50), (220, 180, 320, 240)])]  # fmt: skip
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=3e-3)
    policy.model.train()
    for _ in range(10):
        sft_step(policy, opt, examples)
    policy.model.eval()
    return request.param, policy, screens


def test_sft_trains_the_cells_layer(trained):
    _, policy, _ = trained
    assert policy.pointer.cells.weight.abs().sum() > 0  # it starts at zero


def test_generate_and_the_log_prob_forward_see_the_same_features(trained):
    family, policy, screens = trained
    instructions = ["Click STOP.", "Click the STOP word."]
    out: list = []
    prefill = _seen_embeddings(policy, lambda: out.extend(
        policy.generate(screens, instructions, do_sample=False, max_new_tokens=4)))  # fmt: skip
    prompt_length = policy.encode_prompts(screens, instructions)["input_ids"].shape[1]
    scored = _seen_embeddings(policy, lambda: policy.score(screens, instructions,
                                                           [g[0] for g in out]))  # fmt: skip
    assert torch.allclose(prefill[0], scored[0][:, :prompt_length], atol=1e-6), family


def test_on_policy_grpo_with_reader_cells_has_ratio_1_and_kl_0(trained):
    family, policy, screens = trained
    ref = policy.frozen_copy()
    assert ref.pointer.cells is not policy.pointer.cells
    torch.manual_seed(1)
    groups = policy.generate(screens, ["Click STOP."] * 2, num_samples=4, screen_size=SCREEN)
    rows = [c for g in groups for c in g]
    shots, words = [screens[0]] * 4 + [screens[1]] * 4, ["Click STOP."] * 8
    old = policy.score(shots, words, rows).logprobs.detach()
    before = policy.pointer.cells.weight.detach().clone()
    opt = torch.optim.SGD(policy.trainable_parameters(), lr=0.1)
    advantages = np.array([1.0, -1.0, 0.5, -0.5] * 2)
    stats = grpo_update(policy, opt, shots, words, rows, advantages, old, ref_policy=ref,
                        config=GRPOConfig(kl_coef=0.1))  # fmt: skip
    assert stats["ratio_mean"] == pytest.approx(1.0, abs=1e-5), family
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6), family
    assert not torch.equal(before, policy.pointer.cells.weight), family


def test_a_saved_model_reloads_its_reader_cells_and_clicks_the_same_points(trained, tmp_path):
    family, policy, screens = trained
    policy.save(tmp_path / "m")
    again = load_vlm(str(tmp_path / "m"), _codec())  # the head file's cells turn them on
    assert again.reader_cells is not None
    assert torch.equal(again.pointer.cells.weight, policy.pointer.cells.weight)
    shots, words = [screens[0], screens[1]], ["Click STOP."] * 2
    a = policy.generate(shots, words, do_sample=False, screen_size=SCREEN)
    b = again.generate(shots, words, do_sample=False, screen_size=SCREEN)
    assert [(c[0].text, c[0].patch) for c in a] == [(c[0].text, c[0].patch) for c in b]


# -- errors and old files ---------------------------------------------------------------------
def test_reader_cells_need_the_pointer_head():
    with pytest.raises(PointerError, match="reader_cells: .* no pointer head"):
        load_vlm("tiny-smolvlm", _codec(), vision_size=VISION["smolvlm"], reader_cells=True)


def test_an_old_head_file_loads_without_cells_and_a_huge_one_is_refused(tmp_path):
    plain = load_vlm("tiny-smolvlm", _codec(), vision_size=VISION["smolvlm"], pointer_head=True)
    plain.save(tmp_path / "m")  # a head file of before reader cells
    again = load_vlm(str(tmp_path / "m"), _codec())
    assert again.pointer.cells is None and again.reader_cells is None
    head = again.pointer
    head.cells = torch.nn.Linear(100_000, head.hidden_size, bias=False)
    save_head(head, tmp_path / "m")  # hostile: its shapes would size our allocation
    with pytest.raises(PointerError, match="100000 reader channels"):
        load_vlm(str(tmp_path / "m"), _codec())
    (tmp_path / "m" / HEAD_FILE).unlink()


def test_a_reader_giving_the_wrong_shape_is_one_error():
    policy = _policy("smolvlm")
    policy.reader_cells = lambda screenshot, instruction, boxes: np.zeros((3, 2))
    with pytest.raises(PointerError, match=r"reader_cells gave features of shape \(3, 2\)"):
        policy.generate([_word_screen("OK", (0, 0))], ["Click OK."], do_sample=False)


def test_the_cells_layer_trains_whole_under_lora():
    pytest.importorskip("peft")
    policy = _policy("smolvlm")
    policy.add_lora(r=2, alpha=4)
    assert any(p is policy.pointer.cells.weight for p in policy.trainable_parameters())
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    screen = _word_screen("OK", (100, 100))
    sft_step(policy, opt, [Example(Prompt(screen, "Click OK."), TARGET, box=(100, 100, 160, 140))])
    assert policy.pointer.cells.weight.abs().sum() > 0
