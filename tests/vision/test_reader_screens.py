"""The reader on known MiniWoB++ screens (issue 57 item 5): five 160x210 screenshots kept as PNG
(taken with bench/reader.py's ``miniwob_screens``, seeds as named) with the DOM's words as ground
truth, so that a change that makes the reader faster cannot quietly read worse. No browser runs
here; the counts are what the reader reads today (84 words: 81 exact, 84 fuzzy, 81 of its 93
words right), with one word of slack for another CPU's arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pixelrl.vision.reader import MODEL_ROWS, ReaderError, ScreenReader, _band_top

pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
from test_reader import _bench  # noqa: E402  (tests/vision: bench/reader.py, loaded once)

SCREENS = Path(__file__).parent / "data" / "reader_screens"


def _screens():
    bench = _bench()
    truths = json.loads((SCREENS / "truths.json").read_text())
    for name, rows in sorted(truths.items()):
        image = np.asarray(Image.open(SCREENS / f"{name}.png").convert("RGB"))
        yield name, image, [bench.Truth(t[0], tuple(t[1]), tuple(t[2])) for t in rows]


def test_known_miniwob_screens_read_as_well_as_before():
    bench = _bench()
    reader = ScreenReader(cache_size=0)
    tally = bench.Tally()
    for name, image, truths in _screens():
        assert image.shape == (210, 160, 3), name
        bench.score(reader.read(image), truths, tally, f"{name}: ")
    assert tally.truths == 84
    assert tally.found >= 80 and tally.found_fuzzy >= 83, tally.misses
    assert tally.right / tally.read >= 0.85, tally.wrong
    assert tally.iou_ok >= 20, tally.iou_ok  # DOM line boxes: a lower bound (bench/reader.py)


def test_the_paragraph_screen_reads_its_words():
    """click-link's paragraph, the slowest kind of screen (the most columns to read), word for
    word but ``Ultrices`` (read ``Uitrices``, by the reading of 48 rows at stretch 1.2 too)."""
    bench = _bench()
    (image,) = [img for name, img, _ in _screens() if name == "click-link-5"]
    texts = [bench.clean(w.text) for w in ScreenReader(cache_size=0).read(image)]
    assert texts == ["Click", "on", "the", "link", "eu", "Uitrices", "Facilisi", "volutpat",
                     "accumsan", "sit", "eu", "feugiat", "Ultricies", "malesuada", "Sollicitudin",
                     "pretium", "consequat", "eu", "nulla", "adipiscing", "etiam", "vestibulum",
                     "adipiscing", "ut", "nunc"]  # fmt: skip


@pytest.mark.parametrize("rows", [0, 4, 44, 56, 40.0, True, "40"])
def test_rows_must_be_a_multiple_of_8_up_to_the_models(rows):
    with pytest.raises(ReaderError, match=r"rows must be a multiple of 8 in \[8, 48\]"):
        ScreenReader(rows=rows)


def test_the_rows_read_are_centred_on_the_ink():
    ink = np.zeros((30, 50), dtype=bool)
    assert _band_top(ink, 40) == 4  # no ink: the middle
    ink[0:6] = True  # ink at the top: the band starts at the crop's top, not above it
    assert _band_top(ink, 40) == 0
    ink[:] = False
    ink[24:30] = True  # at the bottom: it ends at the crop's bottom
    assert _band_top(ink, 40) == MODEL_ROWS - 40
    ink[:] = False
    ink[10:20] = True  # rows 16..32 of 48 hold the ink: 40 rows from 4
    assert _band_top(ink, 40) == 4 and _band_top(ink, MODEL_ROWS) == 0
