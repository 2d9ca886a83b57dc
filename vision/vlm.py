"""A vision-language policy: image + instruction + history -> action text -> action.

:class:`VLMPolicy` wraps any transformers image-text-to-text model and its processor. It

1. builds the prompt — the screenshot (or several images: :func:`prompt_images`), the
   instruction and the last few actions — with the
   processor's chat template where the family has one (PaliGemma has none: its prompt is the
   image token followed by the text, and its processor adds ``<bos>`` and the closing newline);
2. ``generate``\\ s text: greedy or sampled, ``num_samples`` (GRPO's G) completions per prompt,
   each with the token ids and the log-probabilities it was sampled with;
3. scores ``logprobs`` of given completions (text or token ids) under the model, token by token,
   masked to the completion — differentiable, for SFT and GRPO;
   a prompt repeated in a batch (GRPO's G samples) is run once, in ``generate`` and ``score``
   alike: its key/value cache is shared where the language model's positions are plain 1-D
   (SmolVLM / Idefics3, LLaVA), its image features elsewhere. The numbers are the same as
   running every row (tested); only the repeated work goes;
4. parses the output with its action codec (:mod:`pixelrl.vision.action_codec`, required:
   :class:`pixelrl.envs.gui_action.codec.GUIActionCodec` for GUI actions,
   :class:`pixelrl.envs.nav.action_text.NavActionCodec` for navigation): unparsable text becomes
   the codec's no-op (a GUI ``wait``; nothing, for navigation) with ``parsed = False`` (format
   reward 0), never an exception. The history in a prompt is text (earlier answers, as the
   codec writes them): this module knows no domain;
5. helps training: :meth:`VLMPolicy.frozen_copy` (GRPO's KL reference) and
   :meth:`VLMPolicy.add_lora` (peft adapters on the language model, for large models).

Image placeholder tokens (``<image>``, ``<|image_pad|>``, ``<|vision_start|>``...) are never
sampled and never read from a completion's text: an answer cannot ask for image features.

Completions end with the tokenizer's end token (``eos_token``: ``<|im_end|>`` for Qwen,
``<end_of_utterance>`` for SmolVLM/Idefics3, ``</s>`` for LLaVA, ``<eos>`` for PaliGemma); the
end token is part of the scored completion, as in TRL, so a policy learns to stop.

:func:`load_vlm` loads a model by name or path (``from_pretrained``) or builds a tiny random one,
``"tiny-<family>"`` (:mod:`pixelrl.vision.tiny_vlm`), with a byte-level BPE tokenizer trained on
the spot from :func:`tiny_corpus` (fully offline). Families: ``qwen2_vl``, ``qwen2_5_vl``,
``idefics3``, ``smolvlm``, ``paligemma``, ``llava``.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.vision.action_codec import ActionCodec
from pixelrl.vision.model_source import (
    CheckpointError,
    check_hub_model,
    is_hub_id,
    missing_path_message,
)
from pixelrl.vision.tiny_vlm import FAMILIES, build_tiny_vlm, tool_tokens, use_tool_chat_template

__all__ = ["FAMILIES", "Completion", "VLMPolicy", "load_vlm", "tiny_corpus", "tiny_family"]

# {hint} is the action codec's answer_hint (for the GUI codec, the text this prompt always had).
DEFAULT_PROMPT = "{instruction}\nPrevious actions: {history}\n{hint}"


@dataclass
class Completion:
    """One generated answer: its text, token ids (end token included when the model stopped),
    the log-probability of each token when it was sampled, and the parsed action."""

    text: str
    token_ids: list[int]
    sampled_logprobs: list[float]
    action: Any  # the codec's action: a GUI Action, a tuple of navigation action ids, ...
    parsed: bool
    error: str | None = None
    # with a pointer head: the image cell the pointer token chose (its log-prob is in
    # sampled_logprobs at the pointer token), else None
    patch: int | None = None

    @property
    def logprob(self) -> float:
        return float(sum(self.sampled_logprobs))


@dataclass
class ScoredTokens:
    """Per-token log-probs of a batch of completions, right-padded: ``logprobs`` and ``mask``
    are (B, T); ``mask`` is 1 on completion tokens, 0 on padding."""

    logprobs: Any  # torch.Tensor (B, T)
    mask: Any  # torch.Tensor (B, T)
    token_ids: Any  # torch.Tensor (B, T)

    @property
    def sequence_logprobs(self):
        """(B,) sum of the completion's token log-probs."""
        return (self.logprobs * self.mask).sum(-1)


def _to_pil(screenshot):
    from PIL import Image

    if isinstance(screenshot, Image.Image):
        return screenshot.convert("RGB")
    arr = np.asarray(screenshot)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"screenshot must be uint8 H×W×3, got {arr.dtype} {arr.shape}")
    return Image.fromarray(arr)


def prompt_images(screenshot) -> list:
    """A prompt's images as PIL: one image (H×W×3 uint8 or PIL), or a tuple or list of them,
    which the prompt shows as separate images in that order (a navigation agent's last frames:
    each keeps its own size, nothing is stitched or squashed into one square)."""
    if isinstance(screenshot, (tuple, list)):
        if not screenshot:
            raise ValueError("a prompt's tuple of images is empty")
        return [_to_pil(s) for s in screenshot]
    return [_to_pil(screenshot)]


def _image_digest(image) -> tuple:
    """An image's size, mode and a hash of its pixels (what the processor's output depends on)."""
    import hashlib

    return (image.size, image.mode, hashlib.blake2b(image.tobytes(), digest_size=16).digest())


class VLMPolicy:
    """An image-text-to-text model that acts through action text.

    ``codec`` is the action language (:mod:`pixelrl.vision.action_codec`): how answers are read
    and actions written. ``history_length`` recent history lines (text) go into the prompt. ``prompt_template`` is formatted with ``instruction``, ``history`` and ``hint``
    (the codec's answer hint). ``pointer_head`` (True, or a
    :class:`~pixelrl.vision.pointer_head.PointerHead`) lets answers point: a ``<|pointer|>``
    token in an answer is a click on the image cell its hidden state attends to
    (:mod:`pixelrl.vision.pointer_head`); off (None), points are text. ``screen_parse`` (image -> text, e.g.
    :class:`pixelrl.vision.reader.SetOfMarks`) adds a parse of the screen under the instruction.
    ``reader_cells`` (True, or ``(screenshot, instruction, boxes) -> (N, channels)`` such as
    :class:`pixelrl.vision.read_cells.ReaderCells`) gives the pointer head what the screen reader
    read where it read it: each image token's pooled channels, mapped by the head's learned
    ``cells`` layer, are added to that token's features where the language model receives them
    (M4C, LayoutLM), in ``generate`` and in ``score`` alike; a head saved with that layer turns
    it on. ``pointer_offset`` gives the pointer head its in-cell offset (where in the chosen cell
    to click, trained towards the target box with SFT; a head saved with it turns it on).
    ``share_prompts`` (default) runs a prompt that a batch repeats
    once; ``False`` runs every row, the same numbers more slowly.
    """

    def __init__(
        self,
        model,
        processor,
        codec: ActionCodec,
        family: str | None = None,
        history_length: int = 3,
        prompt_template: str = DEFAULT_PROMPT,
        share_prompts: bool = True,
        screen_parse: Callable[[Any], str] | None = None,
        pointer_head: Any = None,
        reader_cells: Any = None,
        pointer_offset: bool = False,
    ) -> None:
        if codec is None or not callable(getattr(codec, "parse", None)):
            raise TypeError(f"VLMPolicy needs an action codec (parse/render), got {codec!r}")
        self.model = model
        # run a prompt repeated in a batch once (False: every row, as bench/vlm_throughput.py's peer)
        self.share_prompts = share_prompts
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.family = family or _family_of(model)
        self.history_length = history_length
        self.prompt_template = prompt_template
        # image -> text put under the instruction (a Set-of-Mark parse: pixelrl.vision.reader)
        self.screen_parse = screen_parse
        self.codec = codec
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.end_token_id = self.tokenizer.eos_token_id
        self.placeholder_token_ids = _placeholder_token_ids(model, processor)
        self.pointer, self.pointer_id = None, None
        if pointer_head:
            self._attach_pointer(pointer_head)
        elif _pointer_token() in self.tokenizer.get_vocab():
            from pixelrl.vision.pointer_head import HEAD_FILE, PointerError

            raise PointerError(
                f"the tokenizer has the pointer token {_pointer_token()} but the policy has no "
                f"pointer head ({HEAD_FILE} missing beside the model?)"
            )
        if pointer_offset:
            self._attach_offset()
        self.reader_cells = None
        if reader_cells or (self.pointer is not None and self.pointer.cells is not None):
            self._attach_reader_cells(reader_cells or True)
        # The last batch encode_prompts made, by content: a GRPO step encodes the same prompts
        # to sample, to score and to score under the reference (a shallow copy shares this).
        self._encoded: dict = {}

    # -- prompt -----------------------------------------------------------------------------
    def action_text(self, action: Any, screen_size: tuple[int, int] | None = None) -> str:
        """How this policy writes an action (for history lines and SFT targets)."""
        return self.codec.render(action, screen_size)

    def prompt_text(self, instruction: str, history: Sequence[str] = ()) -> str:
        """The user turn's text: the instruction and the last ``history_length`` history lines
        (earlier actions as text: :meth:`action_text` writes one)."""
        recent = list(history)[-self.history_length :] if self.history_length else []
        for line in recent:
            if not isinstance(line, str):
                raise TypeError(f"a history line is text (action_text(action)), got {line!r}")
        own = getattr(self.codec, "prompt_template", None)
        if own is not None:  # the codec's (tool calls: TRL's first prompt, word for word)
            text = own.format(instruction=instruction, hint=self.codec.answer_hint)
            return text + (f"\nPrevious actions: {'; '.join(recent)}" if recent else "")
        return self.prompt_template.format(
            instruction=instruction,
            history="; ".join(recent) if recent else "none",
            hint=self.codec.answer_hint,
        )

    def build_prompt(
        self, instruction: str, history: Sequence[str] = (), num_images: int = 1
    ) -> str:
        """The full prompt string with ``num_images`` image placeholders (one per image, in
        order, before the text), before the processor expands them."""
        text = self.prompt_text(instruction, history)
        if getattr(self.processor, "chat_template", None):
            # a tool-call codec's tools: their schemas in the system turn, as TRL shows them
            tools = list(getattr(self.codec, "tools", ())) or None
            frame = None if tools else self._chat_frame(num_images)
            if frame is not None:
                return frame[0] + text + frame[1]
            return self._chat_prompt(text, num_images, tools)
        # No chat template (PaliGemma): image token(s) first; the processor adds <bos> and "\n".
        return self.processor.image_token * num_images + text

    def _chat_prompt(self, text: str, num_images: int, tools: list | None = None) -> str:
        """The processor's chat template around one user turn: ``num_images`` images, ``text``."""
        content = [{"type": "image"}] * num_images + [{"type": "text", "text": text}]
        messages = [{"role": "user", "content": content}]
        return self.processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, tools=tools
        )

    def _chat_frame(self, num_images: int) -> tuple[str, str] | None:
        """The chat template's text before and after the user's text, rendered once: a batch's
        prompts differ only in that text, and rendering the template costs about a millisecond
        a row. None (render every prompt) where probes show that the template does not put the
        text in word for word (a template that trims or escapes it)."""
        frames = self.__dict__.setdefault("_chat_frames", {})
        key = (self.processor.chat_template, num_images)
        if key not in frames:
            probe = "\u2063probe\u2063"
            rendered = self._chat_prompt(probe, num_images)
            head, _, tail = rendered.partition(probe)
            verbatim = rendered.count(probe) == 1 and all(
                self._chat_prompt(t, num_images) == head + t + tail
                for t in (" {text}\n", "\nline two ", "")
            )
            frames[key] = (head, tail) if verbatim else None
        return frames[key]

    def encode_prompts(
        self,
        screenshots: Sequence,
        instructions: Sequence[str],
        histories: Sequence[Sequence[str]] | None = None,
    ):
        """Processor inputs (tensors) for a batch of prompts, left-padded for generation. Each
        screenshot is one image or a tuple of images (:func:`prompt_images`)."""
        if len(screenshots) != len(instructions):
            raise ValueError(
                f"screenshots and instructions differ in length: {len(screenshots)} vs {len(instructions)}"
            )
        histories = histories if histories is not None else [()] * len(instructions)
        if self.screen_parse is not None:
            instructions = [
                f"{i}\n{self.screen_parse(s)}" for i, s in zip(instructions, screenshots)
            ]
        images = [prompt_images(s) for s in screenshots]
        texts = [
            self.build_prompt(i, h, len(image))
            for i, h, image in zip(instructions, histories, images)
        ]
        key = (id(self.processor), str(self.model.device), tuple(texts),
               tuple(tuple(_image_digest(i) for i in image) for image in images))  # fmt: skip
        memo = self.__dict__.setdefault("_encoded", {})
        if memo.get("key") == key:  # the same prompts again: the same tensors, a fresh mapping
            return copy.copy(memo["batch"])
        self.tokenizer.padding_side = "left"
        batch = self.processor(text=texts, images=images, padding=True, return_tensors="pt")
        batch.pop("labels", None)  # PaliGemma's processor adds labels for its suffix API
        batch = batch.to(self.model.device)
        memo.update(key=key, batch=copy.copy(batch))  # callers may pop keys of what they get
        return batch

    # -- parsing ----------------------------------------------------------------------------
    def parse(
        self, text: str, screen_size: tuple[int, int] | None = None, screenshot: Any = None
    ) -> tuple[Any, bool, str | None]:
        """``(action, parsed, error)``: unparsable text gives ``(codec.noop, False, reason)``.
        A codec with ``mark_actions`` reads a mark against the screen parse of ``screenshot``
        (the prompt's): the same numbering the prompt showed."""
        if getattr(self.codec, "mark_actions", False):
            boxes = getattr(self.screen_parse, "boxes", None)
            marks = boxes(screenshot) if boxes is not None and screenshot is not None else None
            action, error = self.codec.parse(text, screen_size, marks)
        else:
            action, error = self.codec.parse(text, screen_size)
        if action is None:
            return self.codec.noop, False, error
        return action, True, None

    # -- generation -------------------------------------------------------------------------
    def generate(
        self,
        screenshots: Sequence,
        instructions: Sequence[str],
        histories: Sequence[Sequence[str]] | None = None,
        num_samples: int = 1,
        max_new_tokens: int = 32,
        do_sample: bool = True,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        screen_size: tuple[int, int] | None = None,
    ) -> list[list[Completion]]:
        """``num_samples`` completions for each prompt: a list (prompts) of lists (samples).

        ``sampled_logprobs`` are the log-softmax of the model's raw logits at each step (before
        temperature / top-p), i.e. the same quantity :meth:`score` recomputes. With
        ``screen_size`` the parsed actions must lie on that screen.
        """
        import torch

        if num_samples < 1 or (num_samples > 1 and not do_sample):
            raise ValueError(
                f"num_samples={num_samples} needs num_samples >= 1 and, above 1, do_sample"
            )
        batch = self.encode_prompts(screenshots, instructions, histories)
        prompt_length = batch["input_ids"].shape[1]
        kwargs = dict(
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            num_return_sequences=num_samples,
            output_logits=True,
            return_dict_in_generate=True,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.end_token_id,
            # An image placeholder in the answer would ask the model for image features it
            # does not have (and break scoring): never sample one.
            suppress_tokens=sorted(self.placeholder_token_ids),
        )
        if do_sample:
            kwargs.update(temperature=temperature, top_p=top_p, top_k=top_k)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with torch.no_grad(), self._reading(batch, screenshots, instructions):
            if num_samples > 1 and self.share_prompts and self.family in _PLAIN_POSITION_FAMILIES:
                out = self._generate_from_shared_prompts(batch, num_samples, kwargs)
            else:
                out = self.model.generate(**batch, **kwargs)
        new_tokens = out.sequences[:, prompt_length:]
        # log π(token) step by step, gathering the sampled token (never a (B, T, vocab) tensor).
        logprobs = torch.cat(
            [
                torch.log_softmax(step.float(), -1).gather(1, new_tokens[:, t : t + 1])
                for t, step in enumerate(out.logits)
            ],
            1,
        ).cpu()
        new_tokens = new_tokens.cpu()
        results: list[list[Completion]] = []
        for row in range(new_tokens.shape[0]):
            ids = new_tokens[row].tolist()
            if self.end_token_id in ids:
                ids = ids[: ids.index(self.end_token_id) + 1]
            lps = logprobs[row, : len(ids)].tolist()
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            screenshot = screenshots[row // num_samples]
            action, parsed, error = self.parse(text, screen_size, screenshot)
            if row % num_samples == 0:
                results.append([])
            results[-1].append(Completion(text, ids, lps, action, parsed, error))
        if self.pointer is not None:
            rows = [r // num_samples for r in range(new_tokens.shape[0])]
            self._point([c for group in results for c in group], [screenshots[r] for r in rows],
                        [instructions[r] for r in rows],
                        [(histories or [()] * len(instructions))[r] for r in rows],
                        do_sample, screen_size)  # fmt: skip
        return results

    def _generate_from_shared_prompts(self, batch, num_samples: int, kwargs: dict):
        """``generate`` with ``num_return_sequences=num_samples``, with each prompt's prefill run
        once instead of once per sample: the prompt but its last token goes through the model
        (image included), its cache is repeated for the samples, and ``generate`` goes on from
        there, as it does from any filled cache."""
        prefix = {k: v for k, v in batch.items() if k not in ("input_ids", "attention_mask")}
        mask = batch["attention_mask"][:, :-1]
        # generate() numbers a left-padded row's tokens from its first real token; so must the
        # prefill it continues from (rotary attention sees only the differences).
        positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
        out = self.model(input_ids=batch["input_ids"][:, :-1], attention_mask=mask,
                         position_ids=positions, use_cache=True, logits_to_keep=1, **prefix)  # fmt: skip
        name = _cache_argument(self.model)
        cache = getattr(out, name)
        cache.batch_repeat_interleave(num_samples)
        return self.model.generate(
            input_ids=batch["input_ids"].repeat_interleave(num_samples, 0),
            attention_mask=batch["attention_mask"].repeat_interleave(num_samples, 0),
            **{name: cache},
            **dict(kwargs, num_return_sequences=1),
        )

    # -- scoring ----------------------------------------------------------------------------
    def completion_ids(self, text: str) -> list[int]:
        """Token ids of a completion given as text: its tokens, then the end token. Special
        tokens written in the text (``"<image>"``) are read as plain characters: completions
        come from models and datasets, and must not smuggle in image placeholders."""
        pieces = text.split(_pointer_token()) if self.pointer is not None else [text]
        ids: list[int] = []
        for k, piece in enumerate(pieces):  # with a pointer head, its token between the pieces
            ids += [self.pointer_id] if k else []
            ids += self.tokenizer(piece, add_special_tokens=False, split_special_tokens=True)[
                "input_ids"
            ]
        return ids + [self.end_token_id]

    def _token_ids(self, completion: str | Sequence[int] | Completion) -> list[int]:
        if isinstance(completion, str):
            return self.completion_ids(completion)
        ids = list(completion.token_ids if isinstance(completion, Completion) else completion)
        ids = [int(t) for t in ids]
        bad = sorted(set(ids) & self.placeholder_token_ids)
        if bad:
            raise ValueError(f"completion token ids hold image placeholder tokens {bad}")
        return ids

    def score(
        self,
        screenshots: Sequence,
        instructions: Sequence[str],
        completions: Sequence[str | Sequence[int] | Completion],
        histories: Sequence[Sequence[str]] | None = None,
        pointer_boxes: Sequence | None = None,
    ) -> ScoredTokens:
        """Per-token log-probs ``log π(c_t | prompt, c_<t)`` of each completion (one per prompt;
        repeat a prompt to score several completions). Differentiable: runs with the model's
        current grad mode. Completions are text (tokenised, end token appended), token ids or
        :class:`Completion` objects (their ``token_ids``, exactly as sampled).

        With a pointer head, a completion's pointer token's log-prob also holds its cell's:
        ``log p(cell)`` of a :class:`Completion`'s ``patch`` (GRPO: the cell is part of the
        action), or, given ``pointer_boxes`` (one ``[x0, y0, x1, y1)`` box or None a row),
        ``sum_k target_k log p(k)`` over the box's cells (SFT: minus GUI-Actor's cross-entropy;
        with the head's offset, minus also its squared error towards the box, target-weighted)."""
        import torch

        if len(completions) != len(instructions):
            raise ValueError(
                f"one completion per prompt: {len(completions)} completions, {len(instructions)} prompts"
            )
        ids = [self._token_ids(c) for c in completions]
        if any(len(c) == 0 for c in ids):
            raise ValueError("a completion to score is empty")
        comp, mask = self._padded(ids)
        histories = list(histories) if histories is not None else [()] * len(instructions)
        if self.pointer is None and pointer_boxes is not None:
            from pixelrl.vision.pointer_head import PointerError

            raise PointerError("pointer_boxes given, but this policy has no pointer head")
        if self.pointer is not None and any(self.pointer_id in c for c in ids):
            # the pointer needs the prompt's hidden states row by row: the one-pass forward
            logits, pointed = self._pointer_logits(screenshots, instructions, histories, comp, mask)
            logprobs = torch.log_softmax(logits.float(), -1).gather(-1, comp.unsqueeze(-1))
            logprobs = logprobs.squeeze(-1) + self._pointer_terms(
                pointed, completions, pointer_boxes, comp.shape
            )
            return ScoredTokens(logprobs * mask, mask, comp)
        # A prompt repeated in the batch (GRPO's G completions of one prompt) is run once.
        keys = [(id(s), i, repr(list(h))) for s, i, h in zip(screenshots, instructions, histories)]
        distinct, order = _distinct_rows(keys)
        shared = self.share_prompts and self.family in _PLAIN_POSITION_FAMILIES
        if len(distinct) < len(keys) and shared:
            logits = self._logits_sharing_prompts(
                screenshots, instructions, histories, distinct, order, comp, mask
            )
        else:
            logits = self._logits(screenshots, instructions, histories, comp, mask)
        logprobs = torch.log_softmax(logits.float(), -1).gather(-1, comp.unsqueeze(-1)).squeeze(-1)
        return ScoredTokens(logprobs * mask, mask, comp)

    def _padded(self, ids: Sequence[Sequence[int]]):
        """(B, T) token ids right-padded with the pad token, and their 0/1 mask, on the device."""
        import torch

        length = max(len(c) for c in ids)
        comp = torch.full((len(ids), length), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(ids), length), dtype=torch.long)
        for i, c in enumerate(ids):
            comp[i, : len(c)] = torch.tensor(list(c), dtype=torch.long)
            mask[i, : len(c)] = 1
        return comp.to(self.model.device), mask.to(self.model.device)

    def _logits(self, screenshots, instructions, histories, comp, mask, hidden: bool = False):
        """(B, T, vocab) logits predicting each completion token: one forward pass over prompt
        and completion, row by row; a screenshot repeated in the batch is encoded once.
        ``hidden``: also the last layer's hidden states, (B, P + T, hidden)."""
        import torch

        batch = self.encode_prompts(screenshots, instructions, histories)
        inputs = dict(batch)
        self._share_image_features(inputs, screenshots)
        prompt_ids = inputs.pop("input_ids")
        inputs["input_ids"] = torch.cat([prompt_ids, comp], 1)
        inputs["attention_mask"] = torch.cat([inputs["attention_mask"], mask], 1)
        # Per-token side inputs grow with the completion: PaliGemma's token_type_ids mark it as
        # the (causal) suffix with 1; Qwen's mm_token_type_ids mark it as text with 0.
        for key, value in list(inputs.items()):
            if key in ("input_ids", "attention_mask") or not torch.is_tensor(value):
                continue
            if value.dim() == 2 and value.shape == prompt_ids.shape:
                fill = 1 if key == "token_type_ids" else 0
                inputs[key] = torch.cat([value, torch.full_like(comp, fill)], 1)
        # Logits at positions P-1 .. P+T-2 predict the T completion tokens; keep only those.
        with self._reading(batch, screenshots, instructions):
            out = self.model(**inputs, use_cache=False, logits_to_keep=comp.shape[1] + 1,
                             output_hidden_states=hidden)  # fmt: skip
        if hidden:
            return out.logits[:, :-1], out.hidden_states[-1]
        return out.logits[:, :-1]

    # -- pointer head -----------------------------------------------------------------------
    def _attach_pointer(self, head) -> None:
        """Give the policy its pointer head (``True``: a new one) and the tokenizer its pointer
        token (the embeddings grow by one row when the model has none spare)."""
        from pixelrl.vision.pointer_head import (
            POINTER_FAMILIES,
            POINTER_TOKEN,
            PointerError,
            PointerHead,
        )

        if self.family not in POINTER_FAMILIES:
            raise PointerError(
                f"pointer_head: a {self.family!r} model has no map from its image tokens to the "
                f"screen; families with one: {', '.join(POINTER_FAMILIES)}"
            )
        if not isinstance(getattr(self.model.config, "image_token_id", None), int):
            raise PointerError("pointer_head: the model's config names no image token")
        if not callable(getattr(self.codec, "point_text", None)):
            raise PointerError("pointer_head: this policy's actions hold no screen points")
        if POINTER_TOKEN not in self.tokenizer.get_vocab():
            self.tokenizer.add_tokens([POINTER_TOKEN], special_tokens=True)
            if len(self.tokenizer) > self.model.get_input_embeddings().num_embeddings:
                self.model.resize_token_embeddings(len(self.tokenizer))
        self.pointer_id = int(self.tokenizer.convert_tokens_to_ids(POINTER_TOKEN))
        hidden = int(self.model.config.get_text_config().hidden_size)
        head = PointerHead(hidden) if head is True else head
        if head.hidden_size != hidden:
            raise PointerError(
                f"pointer_head: a head for hidden size {head.hidden_size}, the model's is {hidden}"
            )
        self.pointer = head.to(self.model.device)

    def _attach_offset(self) -> None:
        """Give the pointer head its in-cell offset (a loaded head that has one keeps it)."""
        from pixelrl.vision.pointer_head import PointerError

        if self.pointer is None:
            raise PointerError(
                "pointer_offset: the offset says where in the pointer head's chosen cell to "
                "click; this policy has no pointer head (pointer_head=True)"
            )
        if self.pointer.offset is None:
            self.pointer.add_offset()

    def _attach_reader_cells(self, reader_cells) -> None:
        """Feed the pointer head's image tokens what the screen reader read (``True``: a
        :class:`~pixelrl.vision.read_cells.ReaderCells`): the head gets its ``cells`` layer and
        the language model a pre-hook that adds it (:func:`_add_read_cells`)."""
        from pixelrl.vision.pointer_head import PointerError

        if self.pointer is None:
            raise PointerError(
                "reader_cells: the reader's cells are added to the pointer head's image tokens; "
                "this policy has no pointer head (pointer_head=True)"
            )
        if reader_cells is True:
            from pixelrl.vision.read_cells import ReaderCells

            reader_cells = ReaderCells()
        channels = int(getattr(reader_cells, "channels", 2))
        if self.pointer.cells is None:
            self.pointer.add_cells(channels)
        elif self.pointer.cells.in_features != channels:
            raise PointerError(
                f"reader_cells: the head maps {self.pointer.cells.in_features} reader channels, "
                f"the reader gives {channels}"
            )
        language_model = _language_model(self.model)
        if "_read_cells" not in language_model.__dict__:  # a deep copy carries its hook along
            language_model.register_forward_pre_hook(_add_read_cells, with_kwargs=True)
        language_model._read_cells = None
        self.reader_cells = reader_cells

    @contextlib.contextmanager
    def _reading(self, batch, screenshots, instructions):
        """While the model runs on the processor's ``batch`` of these prompts, the language
        model's pre-hook adds each image token's read features (nothing without reader cells)."""
        if self.reader_cells is None:
            yield
            return
        language_model = _language_model(self.model)
        language_model._read_cells = self._read_features(batch, screenshots, instructions)
        try:
            yield
        finally:
            language_model._read_cells = None

    def _read_features(self, batch, screenshots, instructions) -> tuple:
        """``(prompts, rows, positions, added)``: for every image token of the batch, its row,
        its position in the input ids and ``cells(pooled reader channels)`` (M, hidden; the
        gradient reaches the head's ``cells`` layer through it)."""
        import torch

        from pixelrl.vision.pointer_head import PointerError, image_cells

        image_token = int(self.model.config.image_token_id)
        rows, positions, pooled, memo = [], [], [], {}
        for row, (screenshot, instruction) in enumerate(zip(screenshots, instructions)):
            size = _size_of(screenshot)
            cells = image_cells(self.family, batch, row, size, self.processor, image_token)
            key = (id(screenshot), instruction, cells.boxes.tobytes())  # GRPO repeats a prompt
            if key not in memo:
                features = np.asarray(self.reader_cells(screenshot, instruction, cells.boxes))
                if features.shape != (len(cells.boxes), self.pointer.cells.in_features):
                    raise PointerError(
                        f"reader_cells gave features of shape {features.shape} for "
                        f"{len(cells.boxes)} cells of {self.pointer.cells.in_features} channels"
                    )
                memo[key] = features
            rows.append(np.full(len(cells.positions), row))
            positions.append(cells.positions)
            pooled.append(memo[key])
        weight = self.pointer.cells.weight
        features = torch.as_tensor(np.concatenate(pooled), dtype=weight.dtype, device=weight.device)
        return (len(screenshots), torch.as_tensor(np.concatenate(rows)),
                torch.as_tensor(np.concatenate(positions)), self.pointer.cells(features))  # fmt: skip

    def _pointer_logits(self, screenshots, instructions, histories, comp, mask):
        """:meth:`_logits` and, for each row whose completion holds the pointer token, ``(t,
        log p over cells, cells, where)`` at its first pointer token ``t`` (None for other
        rows); ``where`` (N, 2): the head's in-cell point of each cell (:meth:`PointerHead.where`)."""
        import torch

        from pixelrl.vision.pointer_head import image_cells

        logits, hidden = self._logits(screenshots, instructions, histories, comp, mask, True)
        batch = self.encode_prompts(screenshots, instructions, histories)  # the same, memoised
        start = batch["input_ids"].shape[1]
        image_token = int(self.model.config.image_token_id)
        pointed = []
        for row in range(comp.shape[0]):
            found = ((comp[row] == self.pointer_id) & (mask[row] > 0)).nonzero().flatten()
            if not len(found):
                pointed.append(None)
                continue
            t = int(found[0])
            cells = image_cells(self.family, batch, row, _size_of(screenshots[row]),
                                self.processor, image_token)  # fmt: skip
            keys = hidden[row, torch.as_tensor(cells.positions, device=hidden.device)]
            query = hidden[row, start + t]
            pointed.append((t, self.pointer(query, keys), cells, self.pointer.where(query, keys)))
        return logits, pointed

    def _pointer_terms(self, pointed, completions, boxes, shape):
        """(B, T): each pointing row's cell term at its pointer token (see :meth:`score`)."""
        import torch

        from pixelrl.vision.pointer_head import PointerError, box_target, offset_target

        terms = torch.zeros(shape, device=self.model.device)
        for row, found in enumerate(pointed):
            if found is None:
                continue
            t, logp, cells, where = found
            patch = getattr(completions[row], "patch", None)
            box = boxes[row] if boxes is not None else None
            if patch is not None:
                terms[row, t] = logp[int(patch)]
            elif box is not None:
                target = torch.as_tensor(box_target(cells, box), dtype=logp.dtype)
                target = target.to(logp.device)
                terms[row, t] = (target * logp).sum()
                if self.pointer.offset is not None:
                    # minus the offset's squared error, each cell weighted as its target mass
                    aim = torch.as_tensor(offset_target(cells, box), dtype=where.dtype)
                    error = ((where - aim.to(where.device)) ** 2).sum(-1)
                    terms[row, t] = terms[row, t] - (target * error).sum()
            else:
                raise PointerError(
                    "a completion to score holds the pointer token but names neither its "
                    "cell (Completion.patch) nor a target box (pointer_boxes)"
                )
        return terms

    def _point(self, completions, screenshots, instructions, histories, do_sample, screen_size):
        """Give each generated completion that holds the pointer token its cell (sampled, or the
        most likely one), that cell's log-prob at the token, and its text and action with the
        cell's point (its centre, or where the head's offset says) written where the token was."""
        import torch

        from pixelrl.vision.pointer_head import cell_point

        rows = [i for i, c in enumerate(completions) if self.pointer_id in c.token_ids]
        if not rows:
            return
        comp, mask = self._padded([completions[i].token_ids for i in rows])
        with torch.no_grad():
            _, pointed = self._pointer_logits(*([xs[i] for i in rows] for xs in
                                                (screenshots, instructions, histories)),
                                              comp, mask)  # fmt: skip
        for i, (t, logp, cells, where) in zip(rows, pointed):
            c = completions[i]
            c.patch = int(torch.multinomial(logp.exp(), 1)) if do_sample else int(logp.argmax())
            c.sampled_logprobs[t] += float(logp[c.patch])
            size = _size_of(screenshots[i])
            at = cell_point(cells, c.patch, size, where[c.patch].tolist())
            point = self.codec.point_text(*at, size)
            c.text = self._text_with_point(c.token_ids, point)
            c.action, c.parsed, c.error = self.parse(c.text, screen_size)

    def _text_with_point(self, ids: Sequence[int], point: str) -> str:
        """The completion's text with ``point`` where it holds the pointer token."""
        pieces: list[list[int]] = [[]]
        for t in ids:
            if t == self.pointer_id:
                pieces.append([])
            else:
                pieces[-1].append(t)
        return point.join(self.tokenizer.decode(p, skip_special_tokens=True) for p in pieces)

    def _logits_sharing_prompts(
        self, screenshots, instructions, histories, distinct, order, comp, mask
    ):
        """What :meth:`_logits` computes, with each distinct prompt run once: its key/value
        cache (gradients attached) is copied to every row that repeats it, and only the
        completions run per row. Positions, padding and masks are those of the one-pass
        forward, so log-probs and gradients are the same; the repeated prompt work goes."""
        import torch

        rows = [screenshots[r] for r in distinct], [instructions[r] for r in distinct]
        prompts = self.encode_prompts(*rows, [histories[r] for r in distinct])
        with self._reading(prompts, *rows):
            out = self.model(**prompts, use_cache=True, logits_to_keep=1)
        order = torch.tensor(order, device=comp.device)
        first = out.logits[order]  # (B, 1, vocab): the last prompt position predicts token 0
        if comp.shape[1] == 1:
            return first
        name = _cache_argument(self.model)
        cache = getattr(out, name)
        cache.batch_select_indices(order)
        attention = torch.cat([prompts["attention_mask"][order], mask[:, :-1]], 1)
        rest = self.model(input_ids=comp[:, :-1], attention_mask=attention, use_cache=True,
                          **{name: cache}).logits  # fmt: skip
        return torch.cat([first, rest], 1)

    def _share_image_features(self, inputs: dict, screenshots) -> None:
        """Encode each distinct screenshot once when a batch repeats it: the vision tower runs
        on the distinct images' pixels (picked from ``inputs``) and every row gets its image's
        features through ``mm_encoder_outputs``, transformers' own route for pre-encoded images
        (``generate`` takes it before prefill). Log-probs and gradients are the same as
        encoding every row. A batch with no repeats, or a model without that route, is left as
        it is."""
        import torch

        distinct, order = _distinct_rows([id(s) for s in screenshots])
        model = _transformers_model(self.model)
        encode = getattr(model.base_model, "get_image_features", None)
        if not self.share_prompts or len(distinct) == len(order) or encode is None:
            return
        if "mm_encoder_outputs" not in inspect.signature(model.forward).parameters:
            return
        names = (set(inspect.signature(encode).parameters) - {"kwargs"}) & set(inputs)
        if "image_grid_thw" in inputs:  # Qwen: every image's patches in one (sum, dim) tensor
            grids = inputs["image_grid_thw"]
            patches = inputs["pixel_values"].split(grids.prod(-1).tolist())
            if len(patches) != len(order):
                return
            images = {"pixel_values": torch.cat([patches[i] for i in distinct]),
                      "image_grid_thw": grids[distinct]}  # fmt: skip
        elif "pixel_values" in inputs and inputs["pixel_values"].shape[0] == len(order):
            images = {k: inputs[k][distinct] for k in names if torch.is_tensor(inputs[k])}
        else:
            return
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        pooled = encode(**images, return_dict=True).pooler_output
        if len(pooled) != len(distinct):  # not one entry per prompt: keep the plain path
            return
        if torch.is_tensor(pooled):
            pooled = pooled[torch.tensor(order, device=pooled.device)]
        else:
            pooled = [pooled[k] for k in order]
        inputs.pop("pixel_values")
        inputs.pop("pixel_attention_mask", None)
        inputs["mm_encoder_outputs"] = {"image": BaseModelOutputWithPooling(pooler_output=pooled)}

    # -- training helpers -------------------------------------------------------------------
    def frozen_copy(self) -> VLMPolicy:
        """A deep copy with gradients off, in eval mode: GRPO's reference policy for the KL."""
        import copy

        ref = copy.copy(self)
        ref.model = copy.deepcopy(self.model).eval()
        ref.pointer = copy.deepcopy(self.pointer)
        for p in ref.trainable_parameters():
            p.requires_grad_(False)
        return ref

    def add_lora(
        self,
        r: int = 16,
        alpha: int = 32,
        dropout: float = 0.0,
        target_modules: Sequence[str] | str = ("q_proj", "k_proj", "v_proj", "o_proj"),
    ) -> None:
        """Wrap the model with peft LoRA adapters on the language model's attention projections
        (vision tower left frozen): only the adapters train, and with a pointer head the
        pointer token's embedding rows (:meth:`_pointer_rows`). For large models."""
        from peft import LoraConfig, get_peft_model

        targets = target_modules if isinstance(target_modules, str) else list(target_modules)
        # Restrict to the language model: vision towers name their projections alike.
        if not isinstance(targets, str):
            targets = r".*(language_model|text_model).*\.(" + "|".join(targets) + r")$"
        config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets,
                            **self._pointer_rows())  # fmt: skip
        self.model = get_peft_model(self.model, config)

    def _pointer_rows(self) -> dict:
        """With a pointer head, LoRA's ``trainable_token_indices`` (peft >= 0.15) for the pointer
        token: its input embedding row and (untied) output row train, the rest of both stays
        frozen. The token is new (its rows mean-resized), so frozen it would be read and written
        as that guess forever."""
        if self.pointer is None:
            return {}
        names = {id(m): name for name, m in self.model.named_modules()}
        inputs, outputs = self.model.get_input_embeddings(), self.model.get_output_embeddings()
        rows = {names[id(inputs)]: [self.pointer_id]}
        if outputs is not None and outputs.weight is not inputs.weight:  # tied: peft does both
            rows[names[id(outputs)]] = [self.pointer_id]
        return {"trainable_token_indices": rows}

    def save(self, folder) -> Path:
        """``save_pretrained`` of the model (LoRA adapters merged in) and its processor, the
        folder :func:`load_vlm` reads back."""
        import copy

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        model = self.model
        if hasattr(model, "merge_and_unload"):
            model = copy.deepcopy(model).merge_and_unload()
        model.save_pretrained(folder)
        self.processor.save_pretrained(folder)
        if self.pointer is not None:
            from pixelrl.vision.pointer_head import save_head

            save_head(self.pointer, folder)
        return folder

    def trainable_parameters(self) -> list:
        """The model's trainable parameters and the pointer head's (outside any LoRA wrapper,
        so it trains whole under LoRA too)."""
        head = list(self.pointer.parameters()) if self.pointer is not None else []
        return [p for p in [*self.model.parameters(), *head] if p.requires_grad]

    # -- Policy protocol --------------------------------------------------------------------
    def initial_state(self, batch_size: int) -> list[list[str]]:
        """Empty histories, one per env. (A VLM's memory is its recent actions as text, not a
        tensor: it is trained by SFT / GRPO through :meth:`score`, not by PPO.)"""
        return [[] for _ in range(batch_size)]

    def act(self, obs_batch: dict, state: Any = None, deterministic: bool = False, **gen_kwargs):
        """``(actions, logprobs, None, state)`` for a batch of observations (``screenshot``
        N×H×W×3, ``instruction`` N strings). ``state`` is the per-env history (a list of lists
        of past actions as text), extended here."""
        screenshots = np.asarray(obs_batch["screenshot"])
        instructions = list(obs_batch["instruction"])
        if screenshots.ndim == 3:
            screenshots, instructions = screenshots[None], [obs_batch["instruction"]]
        n = len(instructions)
        state = [list(h) for h in state] if state is not None else [[] for _ in range(n)]
        screen_size = (screenshots.shape[2], screenshots.shape[1])
        samples = self.generate(
            list(screenshots),
            instructions,
            state,
            num_samples=1,
            do_sample=not deterministic,
            screen_size=screen_size,
            **gen_kwargs,
        )
        actions = [s[0].action for s in samples]
        logprobs = np.array([s[0].logprob for s in samples])
        for history, action in zip(state, actions):
            history.append(self.action_text(action, screen_size))
        return actions, logprobs, None, state


# Families whose language model places tokens by a plain 1-D position (no M-RoPE, no prefix-LM
# token types), so a prompt's cache can be reused for the completions that follow it.
_PLAIN_POSITION_FAMILIES = ("idefics3", "smolvlm", "llava")


def _distinct_rows(keys: Sequence) -> tuple[list[int], list[int]]:
    """``(distinct, order)``: the first row of each distinct key, and for every row the position
    of its key in ``distinct`` (so ``[distinct[k] for k in order]`` names a row with its key)."""
    position: dict = {}
    distinct: list[int] = []
    order: list[int] = []
    for row, key in enumerate(keys):
        if key not in position:
            position[key] = len(distinct)
            distinct.append(row)
        order.append(position[key])
    return distinct, order


def _transformers_model(model):
    """The transformers model itself, under a peft wrapper if there is one (its ``forward``
    signature and sub-modules are the ones that say what the model takes)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _cache_argument(model) -> str:
    """The name of the key/value cache in the model's forward and outputs: ``cache`` in
    transformers 5, ``past_key_values`` in 4.x."""
    forward = _transformers_model(model).forward
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


_PLACEHOLDER_NAMES = ("image_token", "video_token", "vision_start_token", "vision_end_token",
                      "fake_image_token", "global_image_token", "boi_token", "eoi_token")  # fmt: skip
_PLACEHOLDER_CONFIG_KEYS = ("image_token_id", "image_token_index", "video_token_id",
                            "vision_start_token_id", "vision_end_token_id")  # fmt: skip


def _placeholder_token_ids(model, processor) -> set[int]:
    """Ids of the tokens that mark or stand for images in a prompt (never part of an answer)."""
    tok = processor.tokenizer
    ids: set[int] = set()
    for name in _PLACEHOLDER_NAMES:
        for owner in (processor, tok):
            token = getattr(owner, name, None)
            if isinstance(token, str):
                token_id = tok.convert_tokens_to_ids(token)
                if token_id is not None and token_id != tok.unk_token_id:
                    ids.add(int(token_id))
    for key in _PLACEHOLDER_CONFIG_KEYS:
        value = getattr(model.config, key, None)
        if isinstance(value, int) and 0 <= value < len(tok):
            ids.add(value)
    ids.discard(tok.eos_token_id)
    ids.discard(tok.pad_token_id)
    return ids


def _pointer_token() -> str:
    from pixelrl.vision.pointer_head import POINTER_TOKEN

    return POINTER_TOKEN


def _size_of(screenshot) -> tuple[int, int]:
    """(width, height) of a screenshot (an H×W×3 array or a PIL image)."""
    if hasattr(screenshot, "size") and not isinstance(screenshot, np.ndarray):
        return tuple(screenshot.size)
    return int(np.shape(screenshot)[1]), int(np.shape(screenshot)[0])


def _language_model(model):
    """The decoder that receives the prompt's embeddings with the image features in place
    (Qwen2-VL / Qwen2.5-VL: ``language_model``; SmolVLM / Idefics3: ``text_model``)."""
    inner = getattr(_transformers_model(model), "model", None)
    for name in ("language_model", "text_model"):
        module = getattr(inner, name, None)
        if module is not None:
            return module
    from pixelrl.vision.pointer_head import PointerError

    raise PointerError(f"reader_cells: no language model found in {type(model).__name__}")


def _add_read_cells(module, args, kwargs):
    """The language model's forward pre-hook: adds the pending read features (set by
    :meth:`VLMPolicy._reading`) to the image tokens' embeddings on a pass that starts at the
    prompt's first token. A pass after it (a decoding step, a completion on a cached prompt)
    holds no image tokens: their features are in the cache already, with the addition."""
    import torch

    pending = module.__dict__.get("_read_cells")
    embeds = kwargs.get("inputs_embeds")
    if pending is None or embeds is None:
        return None
    cache = kwargs.get("cache", kwargs.get("past_key_values"))
    if cache is not None and cache.get_seq_length() > 0:
        return None
    prompts, rows, positions, added = pending
    copies, rest = divmod(embeds.shape[0], prompts)
    if rest or not copies:
        raise RuntimeError(f"reader cells for {prompts} prompts, a pass of {embeds.shape[0]} rows")
    if copies > 1:  # generate's num_return_sequences: each prompt's copies side by side
        rows = (rows[:, None] * copies + torch.arange(copies)).flatten()
        positions = positions.repeat_interleave(copies)
        added = added.repeat_interleave(copies, 0)
    keep = positions < embeds.shape[1]  # a prefill of the prompt but its last token
    index = (rows[keep].to(embeds.device), positions[keep].to(embeds.device))
    kwargs["inputs_embeds"] = embeds.index_put(index, added[keep].to(embeds.dtype), accumulate=True)
    return args, kwargs


def _family_of(model) -> str:
    model_type = getattr(model.config, "model_type", "")
    return {"qwen2_5_vl": "qwen2_5_vl", "qwen2_vl": "qwen2_vl"}.get(model_type, model_type)


# -- loading ----------------------------------------------------------------------------------
def tiny_family(name: str) -> str | None:
    """The family a ``tiny-<family>`` name builds (``-``, ``_`` and ``.`` alike: ``tiny-qwen2.5-vl``
    is ``qwen2_5_vl``); None for other names (unknown families are the builder's to refuse)."""
    if not str(name).startswith("tiny-"):
        return None
    return str(name)[len("tiny-") :].replace("-", "_").replace(".", "_")


def model_source_problem(name_or_path: str) -> str | None:
    """None if :func:`load_vlm` can try ``name_or_path`` without going to the network for a
    name that cannot exist: a known ``tiny-<family>``, a model folder, or a hub id ``org/name``
    (offline: one already in the cache). Else one line saying what is wrong."""
    text = str(name_or_path)
    if text.startswith("tiny-"):
        family = tiny_family(text)
        if family in FAMILIES:
            return None
        return f"unknown tiny model {text!r}; families: {', '.join('tiny-' + f for f in FAMILIES)}"
    if Path(text).is_dir():
        return None
    if not is_hub_id(text):
        return missing_path_message(text, "model folder") + " (or give tiny-<family> or org/name)"
    try:
        check_hub_model(text)
    except CheckpointError as e:
        return str(e)
    return None


def _model_file_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (OSError, ValueError)
    try:  # a cut or random model.safetensors: "incomplete metadata", "header too large"
        from safetensors import SafetensorError

        errors += (SafetensorError,)
    except ImportError:
        pass
    return errors


# What loading a model folder raises when its files are missing, cut short or not a model's
# (callers turn it into their own error: a CheckpointError, an AgentFileError).
MODEL_FILE_ERRORS = _model_file_errors()


def load_vlm(
    name_or_path: str,
    codec: ActionCodec,
    dtype: str | None = None,
    device: str | None = None,
    seed: int = 0,
    text_size: dict[str, int] | None = None,
    vision_size: dict[str, int] | None = None,
    corpus: Sequence[str] | None = None,
    vocab_size: int = 600,
    whole_tool_tokens: bool = False,
    **policy_kwargs,
) -> VLMPolicy:
    """A :class:`VLMPolicy` speaking ``codec`` from a pretrained model (``from_pretrained``: a
    hub name, offline when ``HF_HUB_OFFLINE=1``, or a local folder) or a tiny random one
    (``"tiny-<family>"``, e.g. ``"tiny-qwen2_vl"``; ``-`` and ``_`` are interchangeable,
    ``tiny-qwen2.5-vl`` works too; ``text_size`` and ``vision_size`` scale a tiny model,
    ``corpus`` (default :func:`tiny_corpus` of the codec) and ``vocab_size`` make its tokenizer,
    see :func:`pixelrl.vision.tiny_vlm.build_tiny_vlm`; with a tool-call codec and
    ``whole_tool_tokens`` the call tags and tool names are one token each,
    :func:`~pixelrl.vision.tiny_vlm.tool_tokens`)."""
    import torch

    if name_or_path.startswith("tiny-"):
        family = tiny_family(name_or_path)
        corpus = corpus if corpus is not None else tiny_corpus(codec, seed)
        tools = getattr(codec, "tools", ())  # a tool-call codec: its tools' JSON schemas
        whole = tool_tokens(tools) if tools and whole_tool_tokens else ()
        model, processor = build_tiny_vlm(
            family, corpus, seed=seed, text_size=text_size, vision_size=vision_size,
            vocab_size=vocab_size, whole_words=whole,
        )  # fmt: skip
        if tools:  # a template that shows the tools
            use_tool_chat_template(processor, family)
    else:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        torch_dtype = getattr(torch, dtype) if dtype else "auto"
        # A model folder is data: its own code (``auto_map``) is never run, and transformers is
        # never left to ask on the terminal whether to run it.
        try:
            processor = AutoProcessor.from_pretrained(name_or_path, trust_remote_code=False)
            model = AutoModelForImageTextToText.from_pretrained(
                name_or_path, dtype=torch_dtype, trust_remote_code=False
            )
        except ValueError as e:
            if "custom code" not in str(e):
                raise
            raise ValueError(
                f"{name_or_path}: the model asks to run code of its own (auto_map in its "
                "config); pixelrl never runs a model's code: use a model whose architecture "
                "transformers ships"
            ) from None
        family = None
        from pixelrl.vision.pointer_head import HEAD_FILE, load_head

        if (Path(name_or_path) / HEAD_FILE).is_file():  # a folder saved with its pointer head
            hidden = int(model.config.get_text_config().hidden_size)
            policy_kwargs["pointer_head"] = load_head(name_or_path, hidden)
    if dtype and name_or_path.startswith("tiny-"):
        model = model.to(getattr(torch, dtype))
    if device:
        model = model.to(device)
    return VLMPolicy(model, processor, codec, family=family, **policy_kwargs)


def tiny_corpus(codec: ActionCodec, seed: int = 0) -> list[str]:
    """What a tiny model's tokenizer learns from by default: the codec's texts (its action
    language and the words of its tasks), the prompt as it reads before formatting, and the
    digits and punctuation every answer may use."""
    prompt = DEFAULT_PROMPT.format(
        instruction="{instruction}", history="{history}", hint=codec.answer_hint
    )
    return list(codec.corpus(seed)) + [prompt, "0123456789 ,.()[]'\"=_-:;\n"]
