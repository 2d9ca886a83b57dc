"""What the pretrained screen reader adds to the pointer policy's view: two read maps.

The pointer policy learns to read from its own pixels (:mod:`.pointer_policy`'s match maps), and
a CNN trained from scratch for an hour does not learn to read 10-px glyphs of a string drawn
fresh each episode (MiniWoB++'s click-checkboxes, click-option, click-link; issue 41). So the
reader (:class:`pixelrl.vision.reader.ScreenReader`, PP-OCR) reads the screenshot, and
``PointerSpec(reader=True)`` gives the policy its verdict as two image-sized channels
(``obs["read"]``, uint8 h×w×2):

- channel 0, **named**: inside the box of each read word that an instruction word matches,
  255 × the match (:func:`pixelrl.vision.text_match.similarity`, forgiving case, 0/O and 1/l/I;
  kept when >= ``MATCH_FLOOR``); the best match where boxes overlap;
- channel 1, **text**: 255 inside the box of every read word (where text is, named or not).

Both are drawn by :func:`pixelrl.vision.read_cells.paint`, which the vision-language policy's
pointer head shares (``reader_cells``: the same channels pooled to its image tokens).

The policy pools them to its grid beside its learned match maps (Set-of-Mark's idea, in pixels:
the parse says where the named words are, the CNN says what is clickable next to them).

Pixels only: the reader sees the screenshot and nothing else; the instruction is the words the
policy already gets. Reading costs ~0.1-0.2 s a 160x210 screen on this CPU, so a screen is read
again only when more than ``REREAD_CHANGE`` of its pixels changed since the last read (a new
episode, a tab switched, a dialog opened) and a ticked box or a focus ring keeps the last read's
words; the reader's own cache also skips frames it has read.
"""

from __future__ import annotations

import numpy as np

from pixelrl.vision.read_cells import MATCH_FLOOR, instruction_tokens, paint

__all__ = [
    "MATCH_FLOOR",
    "REREAD_CHANGE",
    "ReadMaps",
    "instruction_tokens",
    "paint",
    "shared_reader",
]

REREAD_CHANGE = 0.02  # re-read when more than this share of the screen's pixels changed


def shared_reader():
    """The process's one :class:`~pixelrl.vision.reader.ScreenReader` (every env of a vector
    env, the VLM's reader cells and Set-of-Mark parses share it:
    :func:`pixelrl.vision.reader.shared_reader`)."""
    from pixelrl.vision.reader import shared_reader as process_reader

    return process_reader()


class ReadMaps:
    """The read maps of one env's screens, re-reading only when the screen changed enough
    (module doc). ``reads`` counts the reader calls (cache hits included)."""

    def __init__(self, reader=None) -> None:
        self.reader = reader
        self._frame: np.ndarray | None = None
        self._words: list = []
        self.reads = 0

    def __call__(
        self, screenshot: np.ndarray, instruction: str, image_map, image_size: tuple[int, int]
    ) -> np.ndarray:
        if self._changed(screenshot):
            reader = self.reader if self.reader is not None else shared_reader()
            self._words = reader.read(screenshot)
            self._frame = np.array(screenshot, copy=True)
            self.reads += 1
        return paint(self._words, instruction_tokens(instruction), image_map, image_size)

    def forget(self) -> None:
        """A new episode: the next screen is read whatever it shows."""
        self._frame = None

    def _changed(self, screenshot: np.ndarray) -> bool:
        last = self._frame
        if last is None or last.shape != screenshot.shape:
            return True
        differ = np.any(last != screenshot, axis=-1) if screenshot.ndim == 3 else last != screenshot
        return float(differ.mean()) > REREAD_CHANGE
