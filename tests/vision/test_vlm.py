"""The VLM policy wrapper on a tiny random model of every supported family (offline)."""

import functools
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pixelrl.envs.gui_action import Action  # noqa: E402
from pixelrl.envs.gui_action.codec import GUIActionCodec  # noqa: E402
from pixelrl.vision.rewards import format_reward  # noqa: E402
from pixelrl.vision.tiny_vlm import FAMILIES, train_bpe_tokenizer  # noqa: E402
from pixelrl.vision.vlm import VLMPolicy, load_vlm  # noqa: E402

SCREEN = (64, 48)


def _screens(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (SCREEN[1], SCREEN[0], 3), dtype=np.uint8) for _ in range(n)]


@pytest.fixture(scope="module", params=FAMILIES)
def policy(request) -> VLMPolicy:
    return load_vlm(f"tiny-{request.param}", GUIActionCodec(), seed=0)


def test_generate_logprobs_match_rescoring(policy):
    """Sampled completions (G per prompt) and their sampling-time log-probs equal those the
    full forward pass recomputes, for prompts of different lengths in one batch."""
    torch.manual_seed(0)
    instructions = ["Click the OK button", "Type hello into the name field please"]
    histories = [[policy.action_text(Action.click(3, 4), SCREEN)], []]
    groups = policy.generate(
        _screens(2), instructions, histories, num_samples=3, max_new_tokens=8, screen_size=SCREEN
    )
    assert [len(g) for g in groups] == [3, 3]
    flat = [c for g in groups for c in g]
    scored = policy.score(
        [s for s in _screens(2) for _ in range(3)],
        [i for i in instructions for _ in range(3)],
        flat,
        [h for h in histories for _ in range(3)],
    )
    for row, c in enumerate(flat):
        n = len(c.token_ids)
        assert 1 <= n <= 8
        assert scored.mask[row].sum() == n
        np.testing.assert_allclose(
            scored.logprobs[row, :n].detach().numpy(), c.sampled_logprobs, atol=2e-4
        )
        assert c.logprob == pytest.approx(float(scored.sequence_logprobs[row].detach()), abs=1e-3)


@pytest.mark.parametrize(
    "instructions",
    [
        ["Click OK", "Click OK", "Click OK", "Type hi", "Type hi"],  # GRPO: prompts repeat
        ["Click OK", "Click Cancel", "Click Help", "Type hi", "Type yo"],  # SFT: screens repeat
    ],
)
def test_repeats_in_a_batch_are_run_once_with_the_same_logprobs_and_gradients(policy, instructions):
    """GRPO scores G completions of one prompt, SFT several targets on one screen: a repeated
    prompt (or screenshot) goes through the model once, and the log-probs and gradients equal
    those of a batch whose rows are all distinct (copies of the same screenshots)."""
    grads = _check_repeats_run_once(policy, instructions)
    assert [n for n in grads if "vision" in n or "visual" in n], "the vision tower learns"


@pytest.mark.parametrize("family", ["smolvlm", "qwen2_vl"])
def test_repeats_are_run_once_under_lora_adapters_too(family):
    lora = load_vlm(f"tiny-{family}", GUIActionCodec(), seed=0)
    lora.add_lora(r=4)
    grads = _check_repeats_run_once(lora, ["Click OK"] * 3 + ["Type hi"] * 2)
    assert grads and all("lora" in n for n in grads), "only the adapters learn"


def _check_repeats_run_once(policy, instructions) -> dict:
    """Scores five rows over two screenshots, shared and as copies: the vision tower must run
    once on the two distinct images, with the same log-probs and gradients. Returns the
    gradients (parameter name -> tensor)."""
    screens = _screens(2)
    rows = [0, 0, 0, 1, 1]
    texts = ["click(start_box='(1,2)')", "click(start_box='(30,40)')", "wait()", "type(content='hi')",
             "click(start_box='(5,6)')"]  # fmt: skip
    model = (
        policy.model.get_base_model() if hasattr(policy.model, "get_base_model") else policy.model
    )
    encode = model.base_model.get_image_features
    seen = []

    @functools.wraps(encode)
    def counting(*args, **kwargs):
        out = encode(*args, **kwargs)
        seen.append(len(out.pooler_output))  # images encoded in this call
        return out

    def logprobs_and_grads(shots):
        policy.model.zero_grad()
        scored = policy.score(shots, instructions, texts)
        scored.sequence_logprobs.sum().backward()
        grads = {
            n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None
        }
        return scored.logprobs.detach(), grads

    model.base_model.get_image_features = counting
    try:
        shared = logprobs_and_grads([screens[r] for r in rows])
    finally:
        del model.base_model.get_image_features  # back to the class's method
    copied = logprobs_and_grads([screens[r].copy() for r in rows])
    policy.model.zero_grad()
    assert seen == [2], f"the vision tower ran on {seen} images, not once on the 2 distinct ones"
    torch.testing.assert_close(shared[0], copied[0], atol=1e-5, rtol=1e-4)
    assert shared[1].keys() == copied[1].keys()
    for name in shared[1]:
        torch.testing.assert_close(shared[1][name], copied[1][name], atol=1e-5, rtol=1e-3)
    return shared[1]


def test_score_text_completions_is_differentiable(policy):
    texts = ["click(start_box='(100,200)')", "type(content='hello')"]
    scored = policy.score(_screens(2), ["Click OK", "Type hello"], texts)
    lengths = [len(policy.completion_ids(t)) for t in texts]
    assert scored.mask.sum(-1).tolist() == lengths
    assert scored.token_ids[0, lengths[0] - 1] == policy.end_token_id  # the end token is scored
    assert (scored.logprobs[scored.mask.bool()] < 0).all()
    scored.sequence_logprobs.sum().backward()
    grads = [p.grad for p in policy.model.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)
    policy.model.zero_grad()


def test_unparsable_output_is_a_noop_with_format_reward_zero(policy):
    torch.manual_seed(1)
    groups = policy.generate(_screens(1), ["Click OK"], num_samples=4, max_new_tokens=6)
    for c in groups[0]:
        assert c.parsed == bool(format_reward([c.text])[0])
        if not c.parsed:
            assert c.action == Action.wait() and c.error
    for junk in ["", "I would click it", "click(start_box=", "os.system('rm -rf /')", "\x00\xff"]:
        action, parsed, error = policy.parse(junk)
        assert action == Action.wait() and not parsed and error


def test_prompt_holds_image_instruction_and_history(policy):
    enter = policy.action_text(Action.key("enter"))
    prompt = policy.build_prompt("Click OK", ["click(start_box='(1,2)')", enter])
    assert "Click OK" in prompt and "click(start_box='(1,2)')" in prompt
    assert "hotkey(key='enter')" in prompt
    with pytest.raises(TypeError, match="a history line is text"):
        policy.build_prompt("Click OK", [Action.key("enter")])
    assert policy.processor.image_token in prompt
    batch = policy.encode_prompts(_screens(1), ["Click OK"])
    image_id = policy.processor.tokenizer.convert_tokens_to_ids(policy.processor.image_token)
    assert (batch["input_ids"] == image_id).sum() > 1  # the placeholder was expanded


def test_act_follows_the_policy_protocol(policy):
    torch.manual_seed(2)
    obs = {"screenshot": np.stack(_screens(2)), "instruction": ["Click OK", "Press enter"]}
    actions, logprobs, values, state = policy.act(obs, None, max_new_tokens=6)
    assert len(actions) == 2 and all(isinstance(a, Action) for a in actions)
    assert logprobs.shape == (2,) and values is None
    assert [len(h) for h in state] == [1, 1]
    for a in actions:
        if a.point is not None:
            a.validate(SCREEN)  # parsed with the screen size: on screen or a no-op


def test_tokenizer_keeps_special_tokens_whole_and_round_trips_bytes():
    tok = train_bpe_tokenizer(["<pad>", "<eos>", "<image>"], GUIActionCodec().corpus(), eos_token="<eos>", pad_token="<pad>",
                              image_token="<image>", vocab_size=300)  # fmt: skip
    ids = tok("<image><image>click(start_box='(1,2)')", add_special_tokens=False)["input_ids"]
    assert ids[:2] == [tok.image_token_id] * 2
    text = "type(content='héllo wörld ✓')"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text


def test_unknown_family_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown VLM family 'gpt9'"):
        load_vlm("tiny-gpt9", GUIActionCodec())


def test_greedy_generation_picks_the_most_likely_token_each_step(policy):
    groups = policy.generate(_screens(1), ["Click OK"], do_sample=False, max_new_tokens=5)
    again = policy.generate(_screens(1), ["Click OK"], do_sample=False, max_new_tokens=5)
    c = groups[0][0]
    assert c.token_ids == again[0][0].token_ids
    batch = policy.encode_prompts(_screens(1), ["Click OK"])
    ids = torch.cat([batch.pop("input_ids"), torch.tensor([c.token_ids[:-1]])], 1)
    batch["attention_mask"] = torch.ones_like(ids)
    for key in ("token_type_ids", "mm_token_type_ids"):  # per-token side inputs of some families
        if key in batch:
            fill = 1 if key == "token_type_ids" else 0
            pad = torch.full((1, len(c.token_ids) - 1), fill, dtype=batch[key].dtype)
            batch[key] = torch.cat([batch[key], pad], 1)
    with torch.no_grad():
        logits = policy.model(input_ids=ids, **batch).logits[0, -len(c.token_ids) :]
    assert logits.argmax(-1).tolist() == c.token_ids


def test_image_placeholders_never_enter_an_answer(policy):
    image_token = policy.processor.image_token
    # Written in a completion's text, a placeholder is read as plain characters...
    ids = policy.completion_ids(f"type(content='{image_token}')")
    assert not set(ids) & policy.placeholder_token_ids
    scored = policy.score(_screens(1), ["Click OK"], [f"{image_token} click"])
    assert torch.isfinite(scored.logprobs).all()
    # ...as token ids it is refused, and sampling never produces one.
    placeholder = next(iter(policy.placeholder_token_ids))
    with pytest.raises(ValueError, match="placeholder"):
        policy.score(_screens(1), ["Click OK"], [[placeholder, policy.end_token_id]])
    torch.manual_seed(3)
    groups = policy.generate(_screens(2), ["a", "b"], num_samples=4, max_new_tokens=12)
    assert not any(set(c.token_ids) & policy.placeholder_token_ids for g in groups for c in g)


def test_text_size_builds_a_larger_model_from_config():
    small = load_vlm("tiny-qwen2_5_vl", GUIActionCodec())
    size = dict(hidden_size=96, intermediate_size=192, num_hidden_layers=3, num_attention_heads=6)
    big = load_vlm("tiny-qwen2.5-vl", GUIActionCodec(), text_size=size)
    assert big.model.config.text_config.hidden_size == 96
    assert sum(p.numel() for p in big.model.parameters()) > sum(
        p.numel() for p in small.model.parameters()
    )
    assert len(big.generate(_screens(1), ["Click OK"], num_samples=2, max_new_tokens=3)[0]) == 2
    with pytest.raises(ValueError, match="unknown keys"):
        load_vlm("tiny-llava", GUIActionCodec(), text_size={"width": 3})


def test_vision_size_sets_how_many_image_tokens_the_model_sees():
    """A 320×240 screen: PaliGemma squashes it to image_size² (one token per patch), SmolVLM too
    (one token per scale_factor² patches); Qwen keeps the aspect within max_pixels (one token per
    2×2 patches). Keys that do not apply are refused."""
    screen = [np.zeros((240, 320, 3), np.uint8)]
    pali = load_vlm(
        "tiny-paligemma",
        GUIActionCodec(),
        vision_size=dict(image_size=64, patch_size=16, embed_dim=32),
    )
    batch = pali.encode_prompts(screen, ["Click OK"])
    assert (batch["input_ids"] == pali.tokenizer.image_token_id).sum() == (64 // 16) ** 2
    assert tuple(batch["pixel_values"].shape[-2:]) == (64, 64)
    qwen = load_vlm("tiny-qwen2_vl", GUIActionCodec(), vision_size=dict(max_pixels=160 * 120))
    grid = qwen.encode_prompts(screen, ["Click OK"])["image_grid_thw"][0].tolist()
    assert grid == [1, 14, 20]  # 112×160 px in 8 px patches: 7×10 = 70 image tokens
    assert len(qwen.generate(screen, ["Click OK"], num_samples=2, max_new_tokens=3)[0]) == 2
    # SmolVLM: 16×16 patches of 8 px, folded 2×2 by the connector -> 64 image tokens
    smol = load_vlm(
        "tiny-smolvlm",
        GUIActionCodec(),
        vision_size=dict(image_size=128, patch_size=8, scale_factor=2),
    )
    batch = smol.encode_prompts(screen, ["Click OK"])
    assert (batch["input_ids"] == smol.tokenizer.image_token_id).sum() == 64
    assert tuple(batch["pixel_values"].shape[-2:]) == (128, 128)
    assert len(smol.generate(screen, ["Click OK"], num_samples=2, max_new_tokens=3)[0]) == 2
    with pytest.raises(ValueError, match="scale_factor 4"):
        load_vlm(
            "tiny-idefics3",
            GUIActionCodec(),
            vision_size=dict(image_size=48, patch_size=8, scale_factor=4),
        )
    with pytest.raises(ValueError, match="max_pixels"):
        load_vlm("tiny-paligemma", GUIActionCodec(), vision_size={"max_pixels": 100})
    with pytest.raises(ValueError, match="llava"):
        load_vlm("tiny-llava", GUIActionCodec(), vision_size={"image_size": 64})


def test_sincos_position_table_is_smooth_and_distinct():
    from pixelrl.vision.tiny_vlm import sincos_2d_position_table

    table = sincos_2d_position_table(8, 32)
    assert table.shape == (64, 32)
    # every patch has its own code; neighbours are closer than far-apart patches
    dist = torch.cdist(table, table)
    assert (dist + torch.eye(64) * 10).min() > 0
    assert dist[0, 1] < dist[0, 7] and dist[0, 8] < dist[0, 56]
    pali = load_vlm(
        "tiny-paligemma", GUIActionCodec(), vision_size=dict(image_size=32, patch_size=4)
    )
    start = pali.model.model.vision_tower.embeddings.position_embedding.weight
    torch.testing.assert_close(start.detach(), sincos_2d_position_table(8, 32))
    smol = load_vlm("tiny-smolvlm", GUIActionCodec(), vision_size=dict(image_size=64, patch_size=8))
    start = smol.model.model.vision_model.embeddings.position_embedding.weight
    torch.testing.assert_close(start.detach(), sincos_2d_position_table(8, 32))
    with pytest.raises(ValueError, match="multiple of 4"):
        sincos_2d_position_table(4, 30)


def test_tiny_tokenizers_spell_numbers_digit_by_digit(policy):
    tokens = policy.tokenizer.tokenize("click(start_box='(385,907)')")
    assert [t for t in tokens if t.isdigit()] == list("385907")


class WordCodec:
    """A toy action language: one of three words (a codec needs no GUI, no env)."""

    answer_hint = "Answer with red, green or blue."
    noop = "none"
    words = ("red", "green", "blue")

    def parse(self, text, screen_size=None):
        word = str(text).strip()
        return (word, None) if word in self.words else (None, f"not a colour: {word!r}")

    def render(self, action, screen_size=None):
        return str(action)

    def corpus(self, seed=0):
        return [f"{w} {v}" for w in self.words for v in self.words]


def test_a_codec_of_its_own_drives_the_policy():
    policy = load_vlm("tiny-smolvlm", WordCodec(), seed=0)
    assert policy.prompt_text("Pick a colour", ["red"]).endswith("Answer with red, green or blue.")
    groups = policy.generate(_screens(1), ["Pick a colour"], [["red"]], num_samples=2,
                             max_new_tokens=4, screen_size=SCREEN)  # fmt: skip
    for c in groups[0]:
        assert (c.action in WordCodec.words) == c.parsed and (c.parsed or c.action == "none")
    actions, _, _, state = policy.act({"screenshot": np.stack(_screens(1)),
                                       "instruction": ["Pick"]})  # fmt: skip
    assert state == [[WordCodec().render(actions[0])]]
