"""Tiny vision-language models built from config with random weights, fully offline.

:func:`build_tiny_vlm` makes a ``(model, processor)`` of a real transformers family (Qwen2-VL,
Qwen2.5-VL, Idefics3, SmolVLM, PaliGemma, LLaVA) at test size, with a byte-level BPE tokenizer
trained on the spot (:func:`train_bpe_tokenizer`) from a corpus the caller gives: the action
language's texts and the task's words, so that a label is one token. Tests, the demo and the CPU
recipes use them; real users load pretrained models by name (:func:`pixelrl.vision.vlm.load_vlm`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

FAMILIES: tuple[str, ...] = ("qwen2_vl", "qwen2_5_vl", "idefics3", "smolvlm", "paligemma", "llava")


def train_bpe_tokenizer(
    special_tokens: Sequence[str],
    corpus: Sequence[str],
    vocab_size: int = 600,
    whole_words: Sequence[str] = (),
    **named_tokens: str,
):
    """A byte-level BPE tokenizer (a transformers fast tokenizer) trained on ``corpus``
    (a policy's: :func:`pixelrl.vision.vlm.tiny_corpus`); digits are always single tokens. ``special_tokens`` get the first ids and are never split;
    ``whole_words`` are one token each wherever they stand as a word (added, not special:
    decoding keeps them, as Qwen's ``<tool_call>``; :func:`tool_tokens`);
    ``named_tokens`` set the tokenizer's roles (``eos_token="<|im_end|>"``, ``pad_token=...``,
    ``image_token=...``)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # Digits stay single tokens (as in Qwen2's tokenizer): "385" is 3, 8, 5 — every coordinate
    # is spelled the same way, which a small model learns far faster than arbitrary merges.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    # The byte-level pre-tokenizer splits at every "<", "_" and ">", so no BPE merge can join
    # "<tool_call>" or "move_forward": they are added whole. single_word: "click" stays inside
    # "clicks" and "double_click".
    tok.add_tokens(
        [AddedToken(w, single_word=True, normalized=False, special=False) for w in whole_words]
    )
    standard = {
        k: v
        for k, v in named_tokens.items()
        if k in ("bos_token", "eos_token", "pad_token", "unk_token")
    }
    extra = {k: v for k, v in named_tokens.items() if k not in standard}
    return PreTrainedTokenizerFast(tokenizer_object=tok, extra_special_tokens=extra, **standard)


# Hidden sizes of the tiny models: small enough for CPU tests, big enough to learn a little.
_TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=2048)  # fmt: skip
_TINY_IMAGE = 32  # pixels a side for fixed-size vision towers
_TINY_PATCH = 8
# The vision side of the tiny models that take ``vision_size`` (build_tiny_vlm). Qwen resizes the
# screenshot (aspect kept) to at most ``max_pixels`` in multiples of patch·merge px, 2×2 patches
# per image token; PaliGemma squashes it to an ``image_size`` square, one token per patch;
# SmolVLM / Idefics3 squash it too, then fold scale_factor² patches into one token.
_VISION = dict(max_pixels=64 * 64, image_size=_TINY_IMAGE, patch_size=_TINY_PATCH, depth=2,
               embed_dim=32, num_heads=2, scale_factor=2)  # fmt: skip
_VISION_KEYS = {
    "qwen2_vl": {"max_pixels", "patch_size", "depth", "embed_dim", "num_heads"},
    "qwen2_5_vl": {"max_pixels", "patch_size", "depth", "embed_dim", "num_heads"},
    "paligemma": {"image_size", "patch_size", "depth", "embed_dim", "num_heads"},
    "idefics3": {"image_size", "patch_size", "scale_factor", "depth", "embed_dim", "num_heads"},
    "smolvlm": {"image_size", "patch_size", "scale_factor", "depth", "embed_dim", "num_heads"},
}


def _qwen_tokenizer(vocab: dict):
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]  # fmt: skip
    return train_bpe_tokenizer(
        specials, **vocab, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        image_token="<|image_pad|>", video_token="<|video_pad|>",
        vision_start_token="<|vision_start|>", vision_end_token="<|vision_end|>",
    )  # fmt: skip


# Qwen's chat template, reduced to what the policy sends (user turns with an image and text).
_QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}{% if c['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tiny_qwen(version: str, vocab: dict, text_size: dict, vision_size: dict):
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    tok = _qwen_tokenizer(vocab)
    # Qwen resizes to multiples of patch·merge (2·patch) within [min, max] pixels.
    patch = int(vision_size["patch_size"])
    vision = dict(patch_size=patch, merge_size=2, temporal_patch_size=2)
    pixels = dict(min_pixels=(2 * patch) ** 2, max_pixels=int(vision_size["max_pixels"]))
    image_processor = Qwen2VLImageProcessor(**pixels, **vision)
    video_processor = Qwen2VLVideoProcessor(**pixels, **vision)
    tower = {k: int(vision_size[k]) for k in ("depth", "num_heads")}
    ids = {
        "image_token_id": tok.convert_tokens_to_ids("<|image_pad|>"),
        "video_token_id": tok.convert_tokens_to_ids("<|video_pad|>"),
        "vision_start_token_id": tok.convert_tokens_to_ids("<|vision_start|>"),
        "vision_end_token_id": tok.convert_tokens_to_ids("<|vision_end|>"),
    }
    # mrope splits the rotary half-dim (head_dim 16 -> 8) over (time, height, width).
    half = text_size["hidden_size"] // text_size["num_attention_heads"] // 2
    sections = [half // 4, (half - half // 4) // 2, half - half // 4 - (half - half // 4) // 2]
    text = dict(text_size, vocab_size=len(tok), eos_token_id=tok.eos_token_id, bos_token_id=None,
                pad_token_id=tok.pad_token_id, rope_scaling={"type": "mrope", "mrope_section": sections})  # fmt: skip
    if version == "qwen2_vl":
        from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

        vision_config = dict(tower, embed_dim=int(vision_size["embed_dim"]), hidden_size=text_size["hidden_size"],
                             mlp_ratio=2, patch_size=patch, spatial_merge_size=2, temporal_patch_size=2)  # fmt: skip
        config = Qwen2VLConfig(text_config=text, vision_config=vision_config, **ids)
        model = Qwen2VLForConditionalGeneration(config)
        processor = Qwen2VLProcessor(
            image_processor, tok, video_processor, chat_template=_QWEN_TEMPLATE
        )
    else:
        from transformers import (
            Qwen2_5_VLConfig,
            Qwen2_5_VLForConditionalGeneration,
            Qwen2_5_VLProcessor,
        )

        width = int(vision_size["embed_dim"])
        vision_config = dict(tower, hidden_size=width, intermediate_size=2 * width,
                             out_hidden_size=text_size["hidden_size"], patch_size=patch, spatial_merge_size=2,
                             temporal_patch_size=2, window_size=32, fullatt_block_indexes=[1])  # fmt: skip
        config = Qwen2_5_VLConfig(text_config=text, vision_config=vision_config, **ids)
        model = Qwen2_5_VLForConditionalGeneration(config)
        processor = Qwen2_5_VLProcessor(
            image_processor, tok, video_processor, chat_template=_QWEN_TEMPLATE
        )
    return model, processor


def _tiny_idefics3(version: str, vocab: dict, text_size: dict, vision_size: dict):
    import torch

    # SmolVLM and Idefics3 share the layout: Llama text model, SigLIP-like vision tower,
    # pixel-shuffle connector (scale_factor), images squared to max_image_size when not split.
    specials = ["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>",
                "<image>", "<global-img>", "<video>"]  # fmt: skip
    specials += [f"<row_{r}_col_{c}>" for r in range(1, 5) for c in range(1, 5)]
    tok = train_bpe_tokenizer(
        specials, **vocab, bos_token="<|im_start|>", eos_token="<end_of_utterance>",
        pad_token="<|endoftext|>", image_token="<image>", fake_image_token="<fake_token_around_image>",
        global_image_token="<global-img>", end_of_utterance_token="<end_of_utterance>",
    )  # fmt: skip
    # The connector folds scale×scale neighbouring patches into one text-model token, so fine
    # patches (a precise place for each) cost the language model no more tokens.
    side, patch, scale = (int(vision_size[k]) for k in ("image_size", "patch_size", "scale_factor"))
    image_seq_len = (side // patch) ** 2 // scale**2
    embed = int(vision_size["embed_dim"])
    vision = dict(hidden_size=embed, intermediate_size=2 * embed, num_hidden_layers=int(vision_size["depth"]),
                  num_attention_heads=int(vision_size["num_heads"]), image_size=side, patch_size=patch)  # fmt: skip
    text = dict(text_size, vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    image_token_id = tok.convert_tokens_to_ids("<image>")
    sizes = dict(size={"longest_edge": side}, max_image_size={"longest_edge": side},
                 do_image_splitting=False)  # fmt: skip
    if version == "idefics3":
        from transformers import (
            Idefics3Config,
            Idefics3ForConditionalGeneration,
            Idefics3ImageProcessor,
            Idefics3Processor,
        )

        config = Idefics3Config(vision_config=vision, text_config=text, scale_factor=scale,
                                image_token_id=image_token_id)  # fmt: skip
        model = Idefics3ForConditionalGeneration(config)
        processor = Idefics3Processor(
            Idefics3ImageProcessor(**sizes), tok, image_seq_len=image_seq_len,
            chat_template=_SMOL_TEMPLATE,
        )  # fmt: skip
    else:
        from transformers import (
            SmolVLMConfig,
            SmolVLMForConditionalGeneration,
            SmolVLMImageProcessor,
            SmolVLMProcessor,
            SmolVLMVideoProcessor,
        )

        config = SmolVLMConfig(vision_config=vision, text_config=text, scale_factor=scale,
                               image_token_id=image_token_id)  # fmt: skip
        model = SmolVLMForConditionalGeneration(config)
        processor = SmolVLMProcessor(
            SmolVLMImageProcessor(**sizes), tok, SmolVLMVideoProcessor(**sizes),
            image_seq_len=image_seq_len, chat_template=_SMOL_TEMPLATE,
        )  # fmt: skip
    table = model.model.vision_model.embeddings.position_embedding.weight
    with torch.no_grad():
        table.copy_(sincos_2d_position_table(side // patch, embed))
    return model, processor


# SmolVLM / Idefics3's chat template ("<|im_start|>User:<image>text<end_of_utterance>\nAssistant:").
_SMOL_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'] is string %}{{ ': ' + message['content'] }}{% else %}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for c in message['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}"
    "{% elif c['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _tiny_paligemma(vocab: dict, text_size: dict, vision_size: dict):
    import torch
    from transformers import (
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
    )

    tok = train_bpe_tokenizer(
        ["<pad>", "<eos>", "<bos>", "<unk>", "<image>"], **vocab,
        bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>",
        image_token="<image>",
    )  # fmt: skip
    # SigLIP: a square image, one token per patch, learned absolute position embeddings.
    side, patch = int(vision_size["image_size"]), int(vision_size["patch_size"])
    image_processor = SiglipImageProcessor(size={"height": side, "width": side})
    image_processor.image_seq_length = (side // patch) ** 2
    processor = PaliGemmaProcessor(image_processor, tok)  # adds <loc####>/<seg###> tokens
    head_dim = text_size["hidden_size"] // text_size["num_attention_heads"]
    text = dict(text_size, vocab_size=len(tok), head_dim=head_dim, pad_token_id=tok.pad_token_id,
                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    embed = int(vision_size["embed_dim"])
    vision = dict(hidden_size=embed, intermediate_size=2 * embed, num_hidden_layers=int(vision_size["depth"]),
                  num_attention_heads=int(vision_size["num_heads"]), image_size=side, patch_size=patch,
                  vision_use_head=False)  # fmt: skip
    width = text_size["hidden_size"]
    config = PaliGemmaConfig(vision_config=vision, text_config=text, projection_dim=width,
                             hidden_size=width, vocab_size=len(tok),
                             image_token_index=tok.convert_tokens_to_ids("<image>"))  # fmt: skip
    model = PaliGemmaForConditionalGeneration(config)
    table = model.model.vision_tower.embeddings.position_embedding.weight
    with torch.no_grad():
        table.copy_(sincos_2d_position_table(side // patch, embed))
    return model, processor


def sincos_2d_position_table(grid: int, dim: int):
    """(grid², dim) fixed 2D sine-cosine position embeddings (MAE's ``get_2d_sincos_pos_embed``):
    half the channels encode the row, half the column, each as sin/cos at ``dim/4`` frequencies
    ``1/10000^(k/(dim/4))``. The tiny SigLIP tower starts from this table instead of noise: a
    patch's place is then a smooth function a small model reads off at once, which is what
    writing a click's coordinates needs (the table stays trainable)."""
    import torch

    if dim % 4:
        raise ValueError(f"position table: dim {dim} is not a multiple of 4")
    omega = 1.0 / 10000 ** (torch.arange(dim // 4, dtype=torch.float64) / (dim // 4))
    rows, cols = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")

    def encode(pos):
        angles = pos.reshape(-1, 1).double() * omega
        return torch.cat([angles.sin(), angles.cos()], 1)

    return torch.cat([encode(rows), encode(cols)], 1).float()


# LLaVA-1.5's chat template: "USER: <image>\n{text} ASSISTANT:".
_LLAVA_TEMPLATE = (
    "{% for message in messages %}{{ message['role'].upper() + ': ' }}"
    "{% if message['content'] is string %}{{ message['content'] + ' ' }}{% else %}"
    "{% for c in message['content'] if c['type'] == 'image' %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in message['content'] if c['type'] == 'text' %}{{ c['text'] + ' ' }}{% endfor %}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def _tiny_llava(vocab: dict, text_size: dict):
    from transformers import (
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaImageProcessor,
        LlavaProcessor,
    )

    tok = train_bpe_tokenizer(
        ["<unk>", "<s>", "</s>", "<pad>", "<image>"], **vocab,
        bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", image_token="<image>",
    )  # fmt: skip
    # do_pad: pad the screenshot to a square instead of cropping away its edges (LLaVA-1.5 style).
    image_processor = LlavaImageProcessor(
        size={"shortest_edge": _TINY_IMAGE}, crop_size={"height": _TINY_IMAGE, "width": _TINY_IMAGE},
        do_pad=True,
    )  # fmt: skip
    processor = LlavaProcessor(
        image_processor, tok, patch_size=_TINY_PATCH, vision_feature_select_strategy="default",
        chat_template=_LLAVA_TEMPLATE, num_additional_image_tokens=1,
    )  # fmt: skip
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  image_size=_TINY_IMAGE, patch_size=_TINY_PATCH, projection_dim=32)  # fmt: skip
    text = dict(text_size, vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)  # fmt: skip
    config = LlavaConfig(
        vision_config=dict(vision, model_type="clip_vision_model"), text_config=dict(text, model_type="llama"),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_seq_length=(_TINY_IMAGE // _TINY_PATCH) ** 2,
        vision_feature_select_strategy="default", vision_feature_layer=-1,
    )  # fmt: skip
    return LlavaForConditionalGeneration(config), processor


# Each builder takes (vocab: train_bpe_tokenizer's corpus and vocab_size, text_size, vision_size).
_TINY_BUILDERS: dict[str, Callable] = {
    "qwen2_vl": lambda vocab, text, vision: _tiny_qwen("qwen2_vl", vocab, text, vision),
    "qwen2_5_vl": lambda vocab, text, vision: _tiny_qwen("qwen2_5_vl", vocab, text, vision),
    "idefics3": lambda vocab, text, vision: _tiny_idefics3("idefics3", vocab, text, vision),
    "smolvlm": lambda vocab, text, vision: _tiny_idefics3("smolvlm", vocab, text, vision),
    "paligemma": _tiny_paligemma,
    "llava": lambda vocab, text, vision: _tiny_llava(vocab, text),
}


def build_tiny_vlm(
    family: str,
    corpus: Sequence[str],
    seed: int = 0,
    text_size: dict[str, int] | None = None,
    vision_size: dict[str, int] | None = None,
    vocab_size: int = 600,
    whole_words: Sequence[str] = (),
):
    """``(model, processor)``: a tiny random-initialised model of ``family`` (text model hidden
    64, 2 layers; a 2-layer vision tower on 32-64 px images) and its processor, with a byte-level
    BPE tokenizer of ``vocab_size`` tokens trained on ``corpus`` (the action language's and
    the task's words: :func:`pixelrl.vision.vlm.tiny_corpus`). Offline; seeded. A corpus with the task's own words wants a larger vocabulary, so
    that each word becomes one token; ``whole_words`` are one token each whatever the corpus
    (a tool-call model's tags and tool names: :func:`tool_tokens`).

    ``text_size`` overrides the language model's shape (``hidden_size``, ``intermediate_size``,
    ``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``) to build a larger
    model from config, e.g. ~100M parameters for a GPU throughput check.

    ``vision_size`` (all but LLaVA) overrides the vision side: ``patch_size``, ``depth``,
    ``embed_dim``, ``num_heads``, and how big the image is — Qwen: ``max_pixels`` (resized to at
    most this many pixels, aspect kept; one image token per 2×2 patches); PaliGemma:
    ``image_size`` (squashed to that square; one token per patch); SmolVLM / Idefics3:
    ``image_size`` and ``scale_factor`` (squashed to that square; one token per scale_factor²
    patches). The defaults are thumbnails (≤ 64×64 px); reading a 320×240 desktop's labels
    wants ~160 px a side. Grounding needs to know *where* an image token is: SigLIP (PaliGemma,
    SmolVLM, Idefics3) adds learned absolute position embeddings to its patches, which the tiny
    models start from a 2D sin-cos table; Qwen's vision tower has only rotary (relative) ones, so
    a small Qwen trained from scratch has a hard time writing coordinates."""
    import torch

    if family not in _TINY_BUILDERS:
        raise ValueError(f"unknown VLM family {family!r}; tiny families: {', '.join(FAMILIES)}")
    unknown = set(text_size or {}) - set(_TEXT)
    if unknown:
        raise ValueError(f"text_size: unknown keys {sorted(unknown)}; known: {sorted(_TEXT)}")
    size = dict(_TEXT, **(text_size or {}))
    if size["hidden_size"] % size["num_attention_heads"]:
        raise ValueError(
            f"text_size: hidden_size {size['hidden_size']} is not a multiple of "
            f"num_attention_heads {size['num_attention_heads']}"
        )
    known = _VISION_KEYS.get(family, set())
    unknown = set(vision_size or {}) - known
    if unknown:
        raise ValueError(
            f"vision_size: keys {sorted(unknown)} do not apply to {family!r}; "
            f"it takes {sorted(known) or 'none'}"
        )
    vision = dict(_VISION, **(vision_size or {}))
    if "image_size" in known and vision["image_size"] % vision["patch_size"]:
        raise ValueError(
            f"vision_size: image_size {vision['image_size']} is not a multiple of "
            f"patch_size {vision['patch_size']}"
        )
    if (
        "scale_factor" in known
        and (vision["image_size"] // vision["patch_size"]) % vision["scale_factor"]
    ):
        raise ValueError(
            f"vision_size: the {vision['image_size'] // vision['patch_size']}-patch side is not a "
            f"multiple of scale_factor {vision['scale_factor']}"
        )
    if vision["embed_dim"] % vision["num_heads"]:
        raise ValueError(
            f"vision_size: embed_dim {vision['embed_dim']} is not a multiple of "
            f"num_heads {vision['num_heads']}"
        )
    torch.manual_seed(seed)
    vocab = dict(corpus=corpus, vocab_size=vocab_size, whole_words=tuple(whole_words))
    model, processor = _TINY_BUILDERS[family](vocab, size, vision)
    model.eval()
    return model, processor


# Tiny families whose image tokens Qwen3-VL's chat template writes (<|vision_start|>...).
TOOL_CALLING_FAMILIES = ("qwen2_vl", "qwen2_5_vl")


def tool_tokens(tools: Sequence[dict]) -> tuple[str, ...]:
    """The words a tiny tool-calling model's tokenizer keeps whole: the call tags and the name
    of each tool in ``tools`` (their JSON schemas, as the chat template shows them). Real Qwen
    tokenizers have ``<tool_call>`` as one token; a tool's name as one token keeps a 64-d model
    from recombining ``move``, ``_``, ``forward`` into tools that do not exist."""
    names = [str(tool["function"]["name"]) for tool in tools]
    return ("<tool_call>", "</tool_call>", *names)


def use_tool_chat_template(processor, family: str) -> None:
    """Give a tiny ``family`` model's processor Qwen3-VL's chat template: the tool-calling
    template TRL knows how to parse (``supports_tool_calling``, its ``response_schema``), so
    that a tool-call model trained here continues in TRL's ``GRPOTrainer``. Needs ``trl``."""
    if family not in TOOL_CALLING_FAMILIES:
        raise ValueError(
            f"tiny-{family} has no tool-calling chat template TRL accepts; tiny models that "
            f"have one: {', '.join('tiny-' + f for f in TOOL_CALLING_FAMILIES)}"
        )
    try:
        from trl.chat_template_utils import qwen3_vl_chat_template
    except ImportError as e:
        raise ValueError(
            f"a tiny tool-call model takes TRL's chat template: pip install trl ({e})"
        ) from None
    processor.chat_template = processor.tokenizer.chat_template = qwen3_vl_chat_template
    processor.tokenizer.padding_side = "left"  # TRL generates from left-padded prompts
