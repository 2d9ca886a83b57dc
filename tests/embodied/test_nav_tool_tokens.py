"""A tiny tool-calling model's tokenizer keeps the call tags and the tool names whole (issue 55):
a navigation call is a handful of tokens, and a saved model folder reloads writing and reading
the same calls (folders saved before, with the split names, load as they were)."""

from __future__ import annotations

import pytest
import torch

from pixelrl.embodied.vlm_agent import AgentSpec, load_agent, save_agent
from pixelrl.envs.nav.tasks import MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT
from pixelrl.envs.nav.toolcall import TOOLS
from pixelrl.vision.vlm import load_vlm

SPEC = AgentSpec(action_format="toolcall")
TEXT_SIZE = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
             "num_attention_heads": 2, "num_key_value_heads": 1}  # fmt: skip
FRAME = torch.zeros(64, 64, 3, dtype=torch.uint8).numpy()
GOAL = "Go to the point 1.5 m ahead and 0.5 m to the left."


def tiny(whole_tool_tokens: bool):
    codec = SPEC.codec(0.25, 30.0)
    return load_vlm("tiny-qwen2_5_vl", codec, seed=0, text_size=TEXT_SIZE, vocab_size=800,
                    whole_tool_tokens=whole_tool_tokens)  # fmt: skip


def tokens(policy, text: str) -> list[str]:
    return policy.tokenizer.convert_ids_to_tokens(policy.tokenizer(text).input_ids)


def test_the_tags_and_tool_names_are_one_token_each():
    policy = tiny(True)
    for word in ("<tool_call>", "</tool_call>", *TOOLS):
        assert tokens(policy, word) == [word]
    call = policy.codec.render([MOVE_FORWARD] * 3)
    split = tiny(False)  # the tokenizer as it was: "<", "tool", "_", "call", ">", "move", "_", ...
    assert (len(tokens(policy, call)), len(tokens(split, call))) == (19, 29)
    assert "move_forward" in tokens(policy, call) and "move_forward" not in tokens(split, call)
    # the tool names stay whole only as words: an argument named "clicks" is not "click" + "s"
    assert tokens(policy, '"stops": 1') == tokens(split, '"stops": 1')
    for answer in ([MOVE_FORWARD] * 3, [TURN_LEFT, TURN_LEFT, STOP], [TURN_RIGHT] * 5):
        text = policy.codec.render(answer)
        ids = policy.tokenizer(text).input_ids
        assert policy.tokenizer.decode(ids, skip_special_tokens=True) == text  # not special


@pytest.mark.parametrize("whole", [True, False], ids=["whole-tool-tokens", "saved-before"])
def test_a_saved_folder_reloads_and_parses_the_same_calls(tmp_path, whole):
    policy = tiny(whole)
    folder = save_agent(policy, SPEC, tmp_path / "model")
    reloaded = load_agent(folder, 0.25, 30.0).policy
    answers = [[MOVE_FORWARD] * 3, [TURN_LEFT, TURN_LEFT, STOP], [TURN_RIGHT] * 5, [STOP]]
    calls = [policy.codec.render(a) for a in answers]
    for text, actions in zip(calls, answers):
        ids = reloaded.tokenizer(text).input_ids
        assert ids == policy.tokenizer(text).input_ids
        assert len(ids) == len(tokens(policy, text))
        assert reloaded.codec.parse(reloaded.tokenizer.decode(ids)) == (tuple(actions), None)
    # the same model behind the tokens: the same log-probs of the calls, the same greedy answer
    with torch.no_grad():
        a = policy.score([FRAME] * len(calls), [GOAL] * len(calls), calls)
        b = reloaded.score([FRAME] * len(calls), [GOAL] * len(calls), calls)
    assert torch.equal(a.token_ids, b.token_ids) and torch.allclose(a.logprobs, b.logprobs)

    def greedy(p):
        return p.generate([FRAME], [GOAL], do_sample=False, max_new_tokens=12)[0][0]

    assert greedy(reloaded).token_ids == greedy(policy).token_ids
    assert len(tokens(reloaded, calls[0])) == (19 if whole else 29)
