"""The pointer token under LoRA (issue 53 follow-up): the token is new, its embedding rows
mean-resized; LoRA freezes the embeddings, so without peft's ``trainable_token_indices`` the
model would read and write the token as that first guess forever. Its input row and output row
train (only they, of both matrices), and the merged model saved keeps them."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("peft")

from test_pointer_head import _codec, _examples, _policy, _screen  # noqa: E402

from pixelrl.rl.sft import sft_step  # noqa: E402
from pixelrl.vision.vlm import load_vlm  # noqa: E402


def _rows(model) -> tuple[torch.Tensor, torch.Tensor]:
    """The input and output embedding matrices of a plain (merged) model."""
    return (model.get_input_embeddings().weight.detach().clone(),
            model.get_output_embeddings().weight.detach().clone())  # fmt: skip


@pytest.mark.parametrize("family", ["smolvlm", "qwen2_5_vl"])
def test_the_pointer_tokens_rows_train_under_lora_and_are_saved(family, tmp_path):
    policy = _policy(family, pointer_head=True)
    before = _rows(policy.model)
    policy.add_lora(r=2, alpha=4)
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    sft_step(policy, opt, _examples(_screen()))
    policy.save(tmp_path / "m")  # adapters and token rows merged in
    after = _rows(load_vlm(str(tmp_path / "m"), _codec()).model)
    token = policy.pointer_id
    others = torch.arange(len(before[0])) != token
    for old, new in zip(before, after):  # input rows, then output rows
        assert not torch.equal(old[token], new[token]), family
        assert torch.equal(old[others], new[others]), family  # the rest stays frozen
