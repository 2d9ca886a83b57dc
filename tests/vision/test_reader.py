"""The screen reader (issue 41): words with boxes off emulated-desktop screens generated on the
spot, scored against the desktop's own ground truth (bench/reader.py's scoring); bad input reads
as no words; the frame cache; the fuzzy matcher; the missing-extra error."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from pixelrl.vision.reader import ReaderDependencyError, ReaderError, ScreenReader, Word
from pixelrl.vision.text_match import match_tokens, normalise, similarity

pytest.importorskip("rapidocr_onnxruntime", reason="needs the reader extra")
REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_reader", REPO / "bench" / "reader.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_reader"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reader() -> ScreenReader:
    return ScreenReader().warm_up()


def test_reads_desktop_screens_with_word_boxes(reader):
    bench = _bench()
    tally = bench.Tally()
    for family, seed in (("ClickButton", 1), ("CheckBoxes", 2), ("MenuItem", 3)):
        image, truths = bench.desktop_screen(f"pixelrl/Desktop-{family}-v0", (320, 240), seed)
        assert truths
        bench.score(reader.read(image), truths, tally)
    recall, precision = tally.found / tally.truths, tally.right / tally.read
    assert recall >= 0.85 and precision >= 0.85, (tally.misses, tally.wrong)
    assert tally.iou_ok / tally.found >= 0.7, tally.iou_ok


def test_a_line_of_several_words_is_split_with_a_box_each(reader):
    from PIL import Image, ImageDraw

    from pixelrl.envs.desktop.render import font

    image = Image.new("RGB", (200, 40), (255, 255, 255))
    ImageDraw.Draw(image).text((6, 10), "Select mY8 and click Submit", fill=0, font=font(12))
    words = reader.read(np.asarray(image))
    assert [w.text for w in words] == ["Select", "mY8", "and", "click", "Submit"], words
    xs = [w.box for w in words]
    assert all(a[2] <= b[0] + 1 for a, b in zip(xs, xs[1:])), xs  # left to right, disjoint
    assert all(0 <= w.score <= 1 and isinstance(w, Word) for w in words)


@pytest.mark.parametrize(
    "image",
    [
        np.zeros((0, 0, 3), np.uint8),
        np.zeros((1, 1, 3), np.uint8),
        np.zeros((240, 320, 3), np.uint8),
        np.full((5, 7), 200, np.uint8),
        np.zeros((0, 10), np.uint8),
    ],
    ids=["empty", "1x1", "all-black", "grey-2d", "no-rows"],
)
def test_nothing_to_read_is_no_words(image):
    assert ScreenReader().read(image) == []  # no model is even loaded


def test_bad_input_is_a_reader_error(reader):
    with pytest.raises(ReaderError, match="too large"):
        reader.read(np.zeros((9000, 10, 3), np.uint8))
    with pytest.raises(ReaderError, match="shape"):
        reader.read(np.zeros((4, 4, 5), np.uint8))
    with pytest.raises(ReaderError, match="dtype"):
        reader.read(np.array([["a"]], dtype=object))
    for bad in (0, 5, float("nan")):
        with pytest.raises(ReaderError, match="stretch"):
            ScreenReader(stretch=bad)
    for bad in (0, 9, float("nan")):
        with pytest.raises(ReaderError, match=r"detect_upscale must be a number in \[0.25, 8\]"):
            ScreenReader(detect_upscale=bad)


def test_an_unchanged_frame_is_read_once(reader, monkeypatch):
    bench = _bench()
    image, _ = bench.desktop_screen("pixelrl/Desktop-ClickButton-v0", (320, 240), 5)
    cached = ScreenReader(cache_size=2)
    cached._engine = reader._engine
    calls = []
    original = cached._read
    monkeypatch.setattr(cached, "_read", lambda rgb: calls.append(1) or original(rgb))
    first = cached.read(image)
    assert cached.read(image.copy()) == first and len(calls) == 1
    changed = image.copy()
    changed[0, 0] ^= 255
    cached.read(changed)
    cached.read(changed[:, :-1])  # another shape
    assert len(calls) == 3 and len(cached._cache) == 2  # bounded, least recent dropped
    cached.read(image)
    assert len(calls) == 4


def test_fuzzy_matching_forgives_ocr_confusions():
    assert normalise('"Submit"') == normalise("submit")
    assert similarity("mY8", "my8") == 1.0
    assert similarity("O0l1", "00Il") == 1.0  # 0/O and 1/l/I
    assert similarity("Submit", "Cancel") < 0.5
    words = [Word("Cance1", (0, 0, 5, 5), 0.9), Word("Subm1t", (9, 0, 20, 5), 0.9)]
    (t1, w1, s1), (t2, w2, s2), (t3, w3, s3) = match_tokens(["cancel", "submit", "xyz"], words, 0.6)
    assert w1 is words[0] and w2 is words[1] and s1 == s2 == 1.0
    assert w3 is None and s3 < 0.6
    assert match_tokens(["a"], []) == [("a", None, 0.0)]


@pytest.mark.parametrize("module", ["rapidocr_onnxruntime", "onnx"])
def test_a_missing_reader_extra_names_what_to_install(monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(ReaderDependencyError, match=r"pip install 'pixelrl\[reader\]'") as e:
        ScreenReader().read(np.eye(8, dtype=np.uint8) * 255)
    assert "\n" not in str(e.value)


def test_set_of_marks_gives_the_model_points_it_can_copy():
    """A Set-of-Mark parse (issue 41 item 5) numbers the words read and writes each centre as
    the codec writes a click's point: the click on the target's mark lands on the target."""
    import gymnasium

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.reader import SetOfMarks

    env = gymnasium.make("pixelrl/Desktop-ClickButton-v0", screen_size=(320, 240))
    obs, info = env.reset(seed=1)
    label = obs["instruction"].split('"')[1]  # Click the "Stop" button.
    for codec in (GUIActionCodec("uitars"), GUIActionCodec("pyautogui")):
        text = SetOfMarks(codec.point_text)(obs["screenshot"])
        assert text.startswith("Screen text: [1] ")
        marks = text.split("[")[1:]
        mark = next(m for m in marks if m.split()[1] == f'"{label}"')
        point = mark.split()[-1]
        answer = (
            f"click(start_box='{point}')"
            if codec.action_format == "uitars"
            else ("pyautogui.click(x={}, y={})".format(*point.strip("()").split(",")))
        )
        action, error = codec.parse(answer, (320, 240))
        assert error is None
        _, reward, terminated, _, _ = env.step(action)
        assert terminated and reward > 0, (text, answer)
        obs, info = env.reset(seed=1)
    assert SetOfMarks(codec.point_text)(np.zeros((240, 320, 3), np.uint8)) == "Screen text: none"
    with pytest.raises(ReaderError):
        SetOfMarks(codec.point_text, max_words=0)


def test_a_policy_with_a_screen_parse_puts_it_under_the_instruction():
    from pixelrl.envs.gui_action.codec import GUIActionCodec
    from pixelrl.vision.vlm import load_vlm

    codec = GUIActionCodec("uitars")
    policy = load_vlm(
        "tiny-qwen2_vl", codec, screen_parse=lambda image: f"Screen text: {image.shape[1]}px"
    )
    batch = policy.encode_prompts([np.zeros((48, 64, 3), np.uint8)], ["Click OK."])
    text = policy.tokenizer.decode(batch["input_ids"][0], skip_special_tokens=True)
    assert "Click OK.\nScreen text: 64px" in text


def test_a_word_box_keeps_the_line_body_and_its_dots_not_the_next_lines_edge():
    """The detector's padded box can take in the edge of the widget below (a MiniWoB++ checkbox
    19 px down); the word's box must stop at its own line, yet keep an i's dot."""
    from pixelrl.vision.reader import ink_mask

    crop = np.full((60, 40, 3), 255, dtype=np.uint8)
    crop[20:40, 5:35] = 0  # the line's body
    crop[16:18, 10:12] = 0  # a dot two rows above it
    crop[55:57, 5:20] = 0  # the next widget's top border, far below
    rows = np.flatnonzero(ink_mask(crop).any(axis=1))
    assert rows.min() == 16 and rows.max() == 39
    crop[55:57] = 255
    crop[2:4, 5:20] = 0  # a border far above goes as well
    rows = np.flatnonzero(ink_mask(crop).any(axis=1))
    assert rows.min() == 16 and rows.max() == 39


def test_the_folded_models_read_the_same_words_as_the_shipped_ones(reader):
    """fold=True (the default, pixelrl.vision.onnx_fold) is a speed change only."""
    bench = _bench()
    shipped = ScreenReader(fold=False, cache_size=0)
    for family, seed in (("ClickButton", 4), ("CheckBoxes", 5)):
        image, _ = bench.desktop_screen(f"pixelrl/Desktop-{family}-v0", (320, 240), seed)
        folded_words = [(w.text, w.box) for w in reader.read(image)]
        assert folded_words and folded_words == [(w.text, w.box) for w in shipped.read(image)]


def test_a_line_read_before_is_not_read_again_and_reads_the_same(reader, monkeypatch):
    import pixelrl.vision.reader as reader_module

    bench = _bench()
    image, _ = bench.desktop_screen("pixelrl/Desktop-CheckBoxes-v0", (320, 240), 2)
    ticked = image.copy()
    ticked[-8:-2, -8:-2] = 0  # another frame (the frame cache misses), the same text lines
    fresh = ScreenReader(line_cache_size=0)
    remembering = ScreenReader(line_cache_size=64)
    fresh._engine = remembering._engine = reader._engine
    calls = []
    original = reader_module._recognise
    monkeypatch.setattr(reader_module, "_recognise", lambda *a: calls.append(1) or original(*a))
    first = remembering.read(image)
    lines = len(calls)
    assert lines >= 3 and remembering.line_misses == lines and remembering.line_hits == 0
    again = remembering.read(ticked)
    assert remembering.line_hits == lines  # every line of the first frame found again...
    assert len(calls) == lines + remembering.line_misses - lines  # ...and not recognised again
    assert again == fresh.read(ticked) and first == fresh.read(image)  # as read afresh
    small = ScreenReader(line_cache_size=2)
    small._engine = reader._engine
    small.read(image)
    assert len(small._lines) == 2  # bounded, least recent dropped


def test_line_cache_size_must_not_be_negative():
    with pytest.raises(ReaderError, match="line_cache_size >= 0"):
        ScreenReader(line_cache_size=-1)
