"""What the screen reader read, where it read it: two per-pixel channels, and their pooled value
in each of a vision-language model's image cells.

The reader (:class:`pixelrl.vision.reader.ScreenReader`, PP-OCR) gives words with boxes. Its
verdict for an instruction is two channels (:func:`paint`), the ones the CNN pointer policy reads
(``pixelrl.gui_agent.read_maps``, which uses this function):

- channel 0, **named**: inside the box of each read word that an instruction word matches,
  255 x the match (:func:`pixelrl.vision.text_match.similarity`, forgiving case, 0/O and 1/l/I;
  kept when >= :data:`MATCH_FLOOR`); the best match where boxes overlap;
- channel 1, **text**: 255 inside the box of every read word (where text is, named or not).

:class:`ReaderCells` pools them to the screen box of each image token of a vision-language
prompt (:func:`pixelrl.vision.pointer_head.image_cells`): a (cells, 2) array in [0, 1] that the
pointer head's learned map adds to those tokens' features (M4C, LayoutLM: OCR tokens at their 2D
place in the transformer). Pooling is the **max** over the cell's box: a cell that holds any part
of a named word says so at full strength, wherever the word's box falls across cell borders (a
mean would make a short word split over two cells weak in both, and the same word weaker in a
larger cell).

Pixels and the instruction only, never the env's privileged facts. Reading costs ~0.1-0.2 CPU s
a screen; each distinct screenshot is read once (the reader's cache, keyed by a hash of the
pixels), and :attr:`ReaderCells.cpu_s` counts the reading's CPU time for budgets.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["CHANNELS", "MATCH_FLOOR", "ReaderCells", "instruction_tokens", "paint", "pool_cells"]

MATCH_FLOOR = 0.75  # an instruction word "names" a read word from this similarity on
MIN_TOKEN = 2  # instruction words shorter than this ("a", "1") name nothing
MAX_TOKENS = 32  # instruction words matched (an instruction is untrusted text: its length too)
CHANNELS = 2  # named, text


def instruction_tokens(instruction: str) -> list[str]:
    """The instruction's first ``MAX_TOKENS`` distinct words as the screen may show them: split
    on spaces, quotes and punctuation kept off, case kept (the matcher ignores it), short words
    dropped."""
    from pixelrl.vision.text_match import normalise

    tokens = []
    for piece in str(instruction).replace(",", " ").split():
        token = piece.strip("\"'`.,:;!?()[]{}<>\u201c\u201d\u2018\u2019")
        if len(normalise(token)) >= MIN_TOKEN and token not in tokens:
            tokens.append(token)
            if len(tokens) == MAX_TOKENS:
                break
    return tokens


def paint(words, tokens: list[str], image_map, image_size: tuple[int, int]) -> np.ndarray:
    """The two channels (h×w×2 uint8, module doc) of ``words`` (boxes in screen pixels) for
    ``tokens``, drawn in the image that ``image_map`` makes from the screen (its ``to_image``;
    None: the screen itself, ``image_size`` its (width, height))."""
    from pixelrl.vision.text_match import similarity

    w, h = image_size
    maps = np.zeros((h, w, 2), dtype=np.uint8)
    for word in words:
        corners = np.array(word.box, dtype=np.float64).reshape(2, 2)
        (x0, y0), (x1, y1) = corners if image_map is None else image_map.to_image(corners)
        c0, r0 = max(0, int(np.floor(x0))), max(0, int(np.floor(y0)))
        c1, r1 = min(w, int(np.ceil(x1))), min(h, int(np.ceil(y1)))
        if c1 <= c0 or r1 <= r0:
            continue
        maps[r0:r1, c0:c1, 1] = 255
        score = max((similarity(t, word.text) for t in tokens), default=0.0)
        if score >= MATCH_FLOOR:
            region = maps[r0:r1, c0:c1, 0]
            np.maximum(region, np.uint8(round(255 * score)), out=region)
    return maps


def pool_cells(maps: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(N, channels) float32 in [0, 1]: the max of ``maps`` (h×w×channels uint8, screen pixels)
    over each of the N screen ``boxes`` (x0, y0, x1, y1; a box thinner than a pixel still covers
    the pixel it lies in)."""
    h, w = maps.shape[:2]
    pooled = np.zeros((len(boxes), maps.shape[2]), dtype=np.float32)
    if not maps.any():
        return pooled
    for n, (x0, y0, x1, y1) in enumerate(np.asarray(boxes, dtype=np.float64)):
        c0, r0 = min(max(int(np.floor(x0)), 0), w - 1), min(max(int(np.floor(y0)), 0), h - 1)
        c1, r1 = max(min(int(np.ceil(x1)), w), c0 + 1), max(min(int(np.ceil(y1)), h), r0 + 1)
        pooled[n] = maps[r0:r1, c0:c1].reshape(-1, maps.shape[2]).max(0)
    return pooled / 255.0


class ReaderCells:
    """``(screenshot, instruction, boxes) -> (N, 2)``: the reader's channels for ``instruction``
    pooled to each of the N screen ``boxes`` (module doc). ``reader`` defaults to the process's
    shared reader (:func:`pixelrl.vision.reader.shared_reader`: a Set-of-Mark parse of the same
    screen is the same reading). ``reads`` counts screens actually read (cache misses) and
    ``cpu_s`` their process CPU seconds."""

    channels = CHANNELS

    def __init__(self, reader=None) -> None:
        from pixelrl.vision.reader import require_reader, shared_reader

        if reader is None:
            require_reader()  # the missing extra is one error line now, not at the first read
        self.reader = reader if reader is not None else shared_reader()
        self.reads = 0
        self.cpu_s = 0.0

    def words(self, screenshot: Any) -> list:
        """The reader's words of ``screenshot`` (read once per distinct pixels)."""
        from pixelrl.vision.reader import as_rgb

        misses = getattr(self.reader, "misses", None)
        start = time.process_time()
        words = self.reader.read(as_rgb(screenshot))
        if misses is None or self.reader.misses != misses:
            self.reads += 1
            self.cpu_s += time.process_time() - start
        return words

    def __call__(self, screenshot: Any, instruction: str, boxes: np.ndarray) -> np.ndarray:
        from pixelrl.vision.reader import as_rgb

        rgb = as_rgb(screenshot)
        size = (rgb.shape[1], rgb.shape[0])
        maps = paint(self.words(rgb), instruction_tokens(instruction), None, size)
        return pool_cells(maps, boxes)
