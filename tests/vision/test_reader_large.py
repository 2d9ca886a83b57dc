"""The screen reader on images larger than a tile (issue 51): read in overlapping tiles, every
word once with its box in the whole image's pixels, words on a seam included."""

from __future__ import annotations

import numpy as np
import pytest

from pixelrl.vision.reader import TILE, TILE_OVERLAP, ScreenReader, _tiles

pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


@pytest.mark.parametrize("size", [TILE + 1, 2400, 4000, 4880, 8192])
def test_tiles_cover_the_image_and_keep_each_point_once(size):
    spans = _tiles(size)
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(end - start <= TILE for start, end, _ in spans)
    for (_, end, (_, keep_to)), (start, _, (keep_from, _)) in zip(spans, spans[1:]):
        assert end - start >= TILE_OVERLAP  # a word up to the overlap is whole in one tile
        assert keep_to == keep_from  # the keep regions meet: no point kept twice or never
        assert start + TILE_OVERLAP / 2 <= keep_from <= end - TILE_OVERLAP / 2


def test_a_wide_screen_reads_every_word_once_across_the_seam():
    """A 2600 px wide line of words (two tiles; words on and around the seam) reads as it was
    drawn: each word once, boxes where it was drawn."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = TILE + 552, 120
    image = Image.new("RGB", (width, height), "white")
    pen = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=18)
    drawn = []
    for i, x in enumerate(range(20, width - 140, 160)):
        text = WORDS[i % len(WORDS)]
        pen.text((x, 50), text, fill="black", font=font)
        drawn.append((text, x))
    words = ScreenReader(cache_size=0).read(np.asarray(image))
    got = [(w.text, w.box[0]) for w in words]
    assert [text for text, _ in got] == [text for text, _ in drawn]
    assert all(abs(gx - x) <= 3 for (_, gx), (_, x) in zip(got, drawn))
