"""The one place a text policy is loaded: a tiny model from config, a model folder or a
transformers name, with the adapter's codec (and tokenizer corpus), then LoRA if asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pixelrl.config import Config


def load_text_policy(cfg: Config, codec, corpus: Callable[[], list[str] | None] | None = None):
    """The :class:`~pixelrl.vision.vlm.VLMPolicy` a config names (``init`` folder first, else
    ``model``) speaking ``codec``; ``corpus()``: a tiny model's tokenizer texts, asked for only
    when the model is tiny (None: the codec's :func:`~pixelrl.vision.vlm.tiny_corpus`).
    ``lora.enabled`` wraps it with LoRA adapters; ``prompt.screen_parse`` adds a Set-of-Mark
    parse of the screen to every prompt (:func:`screen_parse`)."""
    import torch

    from pixelrl.vision.vlm import load_vlm

    torch.manual_seed(int(cfg.seed))
    source = str(cfg.init or cfg.model)
    extra: dict[str, Any] = {}
    if source.startswith("tiny-"):
        for key in ("text_size", "vision_size"):
            if getattr(cfg, key):
                extra[key] = getattr(cfg, key).to_dict()
        extra["vocab_size"] = int(cfg.tokenizer.vocab_size)
        extra["whole_tool_tokens"] = bool(cfg.tokenizer.tool_tokens)
        texts = corpus() if corpus is not None else None
        if texts is not None:
            extra["corpus"] = texts
    from pixelrl.config import ConfigError
    from pixelrl.vision.pointer_head import PointerError
    from pixelrl.vision.reader import ReaderDependencyError

    try:
        policy = load_vlm(source, codec, dtype=cfg.dtype, device=cfg.device, seed=int(cfg.seed),
                          pointer_head=bool(cfg.pointer_head),
                          reader_cells=bool(getattr(cfg, "reader_cells", False)),
                          pointer_offset=bool(getattr(cfg, "pointer_offset", False)),
                          **extra)  # fmt: skip
    except (PointerError, ReaderDependencyError) as e:
        raise ConfigError(f"{source}: {e}") from None
    policy.screen_parse = screen_parse(cfg, codec)
    if cfg.lora.enabled:
        policy.add_lora(
            r=int(cfg.lora.r), alpha=int(cfg.lora.alpha), dropout=float(cfg.lora.dropout)
        )
    return policy


def screen_parse(cfg: Config, codec):
    """``prompt.screen_parse``: the :class:`~pixelrl.vision.reader.SetOfMarks` of the screen
    reader, its points written as ``codec`` writes a click's (``prompt.screen_words`` at most);
    None when off. A codec that writes no points (navigation) cannot take one."""
    from pixelrl.config import ConfigError

    section = cfg.to_dict().get("prompt", {})
    if not section.get("screen_parse"):
        return None
    if not callable(getattr(codec, "point_text", None)):
        raise ConfigError("prompt.screen_parse: this recipe's actions hold no screen points")
    from pixelrl.vision.reader import SetOfMarks

    return SetOfMarks(codec.point_text, max_words=int(section.get("screen_words", 40)))
