"""An attention pointer head: a click is a distribution over the screenshot's image tokens.

GUI-Actor (2025)'s answer to a vision-language model that cannot write coordinates as text: the
answer holds a pointer token (``click(start_box='<|pointer|>')``) and the click is where that
token's last hidden state attends among the image's tokens in the language model's sequence::

    q = W_q h[pointer]                 h: the language model's last hidden states
    k = W_k h[image tokens]            (one per merged patch: Qwen's 2x2, SmolVLM's pixel shuffle)
    p(cell) = softmax(q . k / sqrt(d))

The action's point is the chosen cell's centre on the screen. What makes that exact is
:func:`image_cells`: which image-token positions of a prompt are which screen boxes, read from the
processor's own numbers (Qwen2-VL / Qwen2.5-VL: ``image_grid_thw``, the smart-resized patch grid,
2x2 merged; SmolVLM / Idefics3: ``image_seq_len`` tokens a tile, the tiles' rows and columns from
the image processor, and the squashed global image).

Training (GUI-Actor's): every cell whose centre lies in the target box is a positive, the target
mass spread evenly over them (:func:`box_target`); the loss is the cross-entropy against that.

A cell is coarse (a 224-px image of a 320x240 screen: 23x17-px cells), and a target smaller than
a cell (a 14-px check-box) may hold no cell's centre: then the centre of the right cell misses.
The optional offset (``PointerHead(offset=True)``, the "in-patch offset" GUI-Actor leaves out)
says where in its cell to click, ``(x, y)`` in [0, 1] of the cell's box, from the pointer's and
the cell's hidden states; it is trained by regression towards the box (:func:`offset_target`) and
starts at the centre, so a head gains it without a change of what it does.

The head's weights are data: a safetensors file beside the model (:data:`HEAD_FILE`), checked
against the model's hidden size when read (:func:`load_head`). This module imports nothing of
pixelrl; :class:`pixelrl.vision.vlm.VLMPolicy` (``pointer_head=True``) wires it in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["HEAD_FILE", "POINTER_TOKEN", "Cells", "PointerError", "PointerHead", "box_target",
           "cell_point", "image_cells", "load_head", "offset_target", "save_head"]  # fmt: skip

POINTER_TOKEN = "<|pointer|>"
HEAD_FILE = "pointer_head.safetensors"
# Families whose image tokens have a known place on the screen (image_cells).
POINTER_FAMILIES = ("qwen2_vl", "qwen2_5_vl", "idefics3", "smolvlm")
MAX_CELL_CHANNELS = 64  # the reader's channels a head file may map (pixelrl.vision.read_cells: 2)


class PointerError(ValueError):
    """A pointer head that cannot work with this model, processor or file (one line)."""


class PointerHead(nn.Module):
    """Query of the pointer token's hidden state, keys of the image tokens' hidden states, and
    their scaled dot product: log-probabilities over the image's cells.

    ``cells`` (channels, or None): also a map ``cells: Linear(channels -> hidden)`` of what the
    screen reader read in each image cell (:mod:`pixelrl.vision.read_cells`) to what is added to
    that cell's image token where the language model receives it (``VLMPolicy(reader_cells=)``).
    It starts at zero, so a model gains the reader's cells without a change of what it does.

    ``offset``: also ``offset: Linear(2 hidden -> 2)``, where in a cell to click (:meth:`where`)."""

    def __init__(
        self,
        hidden_size: int,
        dim: int | None = None,
        cells: int | None = None,
        offset: bool = False,
    ) -> None:
        super().__init__()
        dim = dim or hidden_size
        self.query = nn.Linear(hidden_size, dim)
        self.key = nn.Linear(hidden_size, dim)
        self.cells: nn.Linear | None = None
        if cells:
            self.add_cells(cells)
        self.offset: nn.Linear | None = None
        if offset:
            self.add_offset()

    @property
    def hidden_size(self) -> int:
        return self.query.in_features

    def add_cells(self, channels: int) -> None:
        """Give the head its map of the reader's cells (zeros: nothing added until it learns)."""
        self.cells = nn.Linear(int(channels), self.hidden_size).to(self.query.weight.device)
        nn.init.zeros_(self.cells.weight)
        nn.init.zeros_(self.cells.bias)

    def add_offset(self) -> None:
        """Give the head its in-cell offset (zeros: every click at its cell's centre until it
        learns)."""
        self.offset = nn.Linear(2 * self.hidden_size, 2).to(self.query.weight.device)
        nn.init.zeros_(self.offset.weight)
        nn.init.zeros_(self.offset.bias)

    def where(self, pointer: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        """``pointer`` (hidden,), ``image`` (N, hidden) -> (N, 2): where in each cell a click on
        it lands, ``(x, y)`` in [0, 1] of the cell's box (its centre, 0.5, without an offset)."""
        if self.offset is None:
            return torch.full((image.shape[0], 2), 0.5, device=image.device)
        dtype = self.offset.weight.dtype
        both = torch.cat([pointer.to(dtype).expand(image.shape[0], -1), image.to(dtype)], -1)
        return torch.sigmoid(self.offset(both).float())

    def forward(self, pointer: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
        """``pointer`` (hidden,), ``image`` (N, hidden) -> (N,) log-probabilities over cells."""
        q = self.query(pointer.to(self.query.weight.dtype))
        k = self.key(image.to(self.key.weight.dtype))
        scores = k @ q / math.sqrt(q.shape[-1])
        return torch.log_softmax(scores.float(), -1)


@dataclass(frozen=True)
class Cells:
    """A prompt's image tokens: their ``positions`` in the input ids and the screen ``boxes``
    (N, 4: x0, y0, x1, y1 in screen pixels, floats) each one covers."""

    positions: np.ndarray
    boxes: np.ndarray


def _grid_boxes(rows: int, cols: int, x0: float, y0: float, width: float, height: float):
    """(rows*cols, 4) boxes of a rows x cols grid over the screen rectangle, row-major."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    w, h = width / cols, height / rows
    left, top = x0 + c.ravel() * w, y0 + r.ravel() * h
    return np.stack([left, top, left + w, top + h], 1)


def image_cells(
    family: str, inputs: Any, row: int, screen_size: tuple[int, int], processor, image_token_id: int
) -> Cells:
    """The image tokens of prompt ``row`` of the processor's ``inputs`` and the screen box of
    each, for a screenshot of ``screen_size`` (width, height): one image a prompt."""
    ids = inputs["input_ids"][row]
    positions = (ids == image_token_id).nonzero().flatten().cpu().numpy()
    width, height = screen_size
    if family in ("qwen2_vl", "qwen2_5_vl"):
        # Smart resize scales the whole screenshot to (h, w) patches (multiples of merge);
        # the merger makes one token of each merge x merge block, row-major.
        merge = int(processor.image_processor.merge_size)
        _, h, w = (int(v) for v in inputs["image_grid_thw"][row])
        boxes = _grid_boxes(h // merge, w // merge, 0, 0, width, height)
    elif family in ("idefics3", "smolvlm"):
        # Each image (a tile, or the global image) is squashed to a square and becomes
        # image_seq_len tokens, a side x side grid after pixel shuffle (row-major). Split
        # images: rows x cols tiles of the resized screenshot, row by row, then the global one.
        per_image = int(processor.image_seq_len)
        side = math.isqrt(per_image)
        images = len(positions) // per_image
        boxes = [_grid_boxes(side, side, 0, 0, width, height)]
        if images > 1:
            tiles = _idefics3_tiles(processor, screen_size)
            if tiles[0] * tiles[1] + 1 != images:
                raise PointerError(
                    f"pointer head: {images} images in the prompt, the image processor says "
                    f"{tiles[0]}x{tiles[1]} tiles and a global image"
                )
            rows, cols = tiles
            grid = [_grid_boxes(side, side, c * width / cols, r * height / rows,
                                width / cols, height / rows)
                    for r in range(rows) for c in range(cols)]  # fmt: skip
            boxes = grid + boxes
        boxes = np.concatenate(boxes)
    else:
        raise PointerError(
            f"pointer head: no map from image tokens to the screen for family {family!r}; "
            f"known: {', '.join(POINTER_FAMILIES)}"
        )
    if len(boxes) != len(positions) or not len(positions):
        raise PointerError(
            f"pointer head: {len(positions)} image tokens in the prompt, "
            f"{len(boxes)} cells from the processor's numbers"
        )
    return Cells(positions, boxes)


def _idefics3_tiles(processor, screen_size: tuple[int, int]) -> tuple[int, int]:
    """(rows, cols) of the tiles the image processor splits a screenshot of this size into."""
    from PIL import Image

    blank = Image.new("RGB", screen_size)
    out = processor.image_processor([[blank]], return_row_col_info=True, return_tensors="np")
    return int(out["rows"][0][0]), int(out["cols"][0][0])


def cell_point(
    cells: Cells, index: int, screen_size: tuple[int, int], within: Any = (0.5, 0.5)
) -> tuple[int, int]:
    """The screen pixel a click on cell ``index`` points at: ``within`` its box (``(x, y)`` in
    [0, 1], :meth:`PointerHead.where`; default its centre), on the screen."""
    x0, y0, x1, y1 = cells.boxes[index]
    fx, fy = (min(max(float(v), 0.0), 1.0) for v in within)
    # (1 - f) a + f b: at f = 0.5 exactly (a + b) / 2, the centre as it always was
    x = min(max(int((1 - fx) * x0 + fx * x1), 0), screen_size[0] - 1)
    y = min(max(int((1 - fy) * y0 + fy * y1), 0), screen_size[1] - 1)
    return x, y


# A box's edge quarter is not a target for the offset: a click there lands in it by a pixel's
# luck (a 14-px check-box: aim within its middle 7 px).
OFFSET_MARGIN = 0.25


def offset_target(cells: Cells, box) -> np.ndarray:
    """(N, 2) where in each cell the offset should click for the ``[x0, y0, x1, y1)`` box, as
    ``(x, y)`` in [0, 1] of the cell's box: a cell whose centre lies in the box keeps it (0.5,
    :func:`box_target`'s positives); another aims at the point of the box's middle (its edge
    quarters off) nearest its centre, kept off the cell's edges (0.02, 0.98) where the sigmoid
    saturates."""
    x0, y0, x1, y1 = (float(v) for v in box)
    mx, my = OFFSET_MARGIN * (x1 - x0), OFFSET_MARGIN * (y1 - y0)
    b = cells.boxes
    cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    px, py = np.clip(cx, x0 + mx, x1 - mx), np.clip(cy, y0 + my, y1 - my)
    fx = (px - b[:, 0]) / (b[:, 2] - b[:, 0])
    fy = (py - b[:, 1]) / (b[:, 3] - b[:, 1])
    aim = np.clip(np.stack([fx, fy], 1), 0.02, 0.98)
    inside = (cx >= x0) & (cx < x1) & (cy >= y0) & (cy < y1)
    aim[inside] = 0.5
    return aim


def box_target(cells: Cells, box) -> np.ndarray:
    """GUI-Actor's multi-patch target for a ``[x0, y0, x1, y1)`` box: every cell whose centre
    lies in it, the mass spread evenly; a box smaller than a cell: the cells it overlaps,
    weighted by the overlap (a click at their centre may then miss: say so in figures)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    b = cells.boxes
    cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    inside = (cx >= x0) & (cx < x1) & (cy >= y0) & (cy < y1)
    if inside.any():
        return inside / inside.sum()
    overlap = np.clip(np.minimum(b[:, 2], x1) - np.maximum(b[:, 0], x0), 0, None) * np.clip(
        np.minimum(b[:, 3], y1) - np.maximum(b[:, 1], y0), 0, None
    )
    if overlap.sum() <= 0:
        raise PointerError(f"pointer head: the target box {box} lies off the screen")
    return overlap / overlap.sum()


# -- the head's file --------------------------------------------------------------------------
def save_head(head: PointerHead, folder) -> Path:
    from safetensors.torch import save_file

    path = Path(folder) / HEAD_FILE
    save_file({k: v.detach().cpu().contiguous() for k, v in head.state_dict().items()}, str(path))
    return path


def load_head(folder, hidden_size: int) -> PointerHead:
    """The head saved in ``folder``, read as data (safetensors), for a language model of
    ``hidden_size``: a file of other names or shapes is a :class:`PointerError`."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(folder) / HEAD_FILE
    try:
        tensors = load_file(str(path))
    except (OSError, SafetensorError) as e:
        raise PointerError(f"{path}: not a pointer head file ({e})") from None
    weight = tensors.get("query.weight")
    dim = int(weight.shape[0]) if weight is not None and weight.dim() == 2 else 0
    # a head saved with the reader's cells (an older file has none: it loads without)
    cells = tensors.get("cells.weight")
    channels = int(cells.shape[1]) if cells is not None and cells.dim() == 2 else 0
    if channels > MAX_CELL_CHANNELS:  # a file is data: its shapes do not size our allocations
        raise PointerError(f"{path}: {channels} reader channels (at most {MAX_CELL_CHANNELS})")
    # a head saved with its in-cell offset (the shapes are checked below like the rest)
    head = PointerHead(hidden_size, dim or None, channels or None, "offset.weight" in tensors)
    expected = {k: tuple(v.shape) for k, v in head.state_dict().items()}
    found = {k: tuple(v.shape) for k, v in tensors.items()}
    if found != expected:
        raise PointerError(
            f"{path}: shapes {found} do not fit a language model of hidden size {hidden_size} "
            f"(expected {expected})"
        )
    head.load_state_dict(tensors)
    return head
