"""The pretrained screen reader: a screenshot in, words out (text, box in screen pixels, score).

It reads pixels only: no DOM, no accessibility tree (those stay privileged: rewards, oracles and
benchmark ground truth). The models are PP-OCRv4's text detector and recogniser as ONNX files
inside the ``rapidocr-onnxruntime`` wheel (``pip install 'pixelrl[reader]'``); nothing is
downloaded at run time. One ONNX Runtime thread by default, no angle classifier (screen text is
upright).

How a screen is read:

1. small screens are upscaled (``upscale``; by default 3x when the longer side is at most
   400 px, as MiniWoB++'s 160x210 is: its 10-11 px fonts read badly at 1x);
   Images longer than :data:`TILE` px a side are read tile by tile (overlapping; words in the
   overlap kept once), at the scales of the whole image.
2. the detector finds text lines (on small screens at 2x, ``detect_upscale``: at 1x it clipped
   short labels beside a checkbox); each line's axis-aligned crop of the upscaled image goes to
   the recogniser, which gives the line's text and the position of each character (CTC
   columns);
3. a line that holds several words is split where the line's ink leaves a gap wider than a share
   of its height (the recogniser often drops the spaces of small text: "SelectmY8andclickSubmit")
   or where the recogniser put a space; each word's box is the ink it covers, in the input
   image's pixels (``[x0, y0, x1, y1]``, x1/y1 exclusive).

A cache keyed by the frame's bytes and shape (LRU, ``cache_size`` frames) reads an unchanged
screen once. An empty, 1x1 or single-colour image holds no words: ``[]``, never an exception.

    from pixelrl.vision.reader import ScreenReader
    words = ScreenReader().read(screenshot)        # H×W×3 uint8 RGB
    [(w.text, w.box, round(w.score, 2)) for w in words]
"""

from __future__ import annotations

import functools
import hashlib
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

INSTALL_HINT = "pip install 'pixelrl[reader]'"
MAX_SIDE = 8192  # longer input sides are refused (ReaderError); callers downscale first
MAX_PIXELS = 40_000_000
SMALL_SIDE = 400  # screens whose longer side is at most this are upscaled to be read
# Larger images are read in overlapping tiles of at most TILE px a side: the detector keeps at
# most 1000 boxes an image and shrinks one longer than 4096 px, so a text-dense 4000x2400
# screen read whole gave 1002 of its 1770 words (8192x4880: none). A word is kept by the tile
# that holds its centre away from the tile's edges; words narrower than TILE_OVERLAP are whole
# in that tile.
TILE = 2048
TILE_OVERLAP = 256
MODEL_ROWS = 48  # PP-OCRv4's recogniser reads lines scaled to this many rows


class ReaderError(ValueError):
    """Bad input to the reader (an image that is not one, too large) or its dependency missing."""


class ReaderDependencyError(ReaderError, ImportError):
    """``rapidocr-onnxruntime`` (the ``reader`` extra) is not installed."""


@dataclass(frozen=True)
class Word:
    """One read word: ``text``, ``box`` ``(x0, y0, x1, y1)`` in the input image's pixels (x1, y1
    exclusive) and the recogniser's mean character confidence ``score`` in [0, 1]."""

    text: str
    box: tuple[int, int, int, int]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "box": list(self.box), "score": round(float(self.score), 4)}


# Two words on one row belong to one line (a phrase) when the gap between them is at most this
# many times the taller one's height: a space is ~0.3-0.6 of it, while form columns, a label and
# its field, or two buttons side by side stand several heights apart.
PHRASE_GAP = 1.2


@dataclass(frozen=True)
class Line:
    """Words read side by side on one row with no wide gap between them (:func:`group_lines`):
    ``text`` (the words joined by spaces), ``box`` around them all, ``score`` the lowest word's."""

    text: str
    box: tuple[int, int, int, int]
    score: float
    words: tuple[Word, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "box": list(self.box), "score": round(float(self.score), 4),
                "words": [w.to_dict() for w in self.words]}  # fmt: skip


def group_lines(words: list[Word], gap: float = PHRASE_GAP) -> list[Line]:
    """``words`` (as :meth:`ScreenReader.read` returns them: rows top to bottom, left to right
    in a row) joined into lines: a word continues the line before it when their vertical spans
    overlap by half the shorter one and the gap between them is at most ``gap`` times the
    taller one's height; otherwise it starts a new line."""
    groups: list[list[Word]] = []
    for word in words:
        last = groups[-1][-1] if groups else None
        if last is not None and _same_line(last, word, gap):
            groups[-1].append(word)
        else:
            groups.append([word])
    return [
        Line(
            " ".join(w.text for w in group),
            (
                min(w.box[0] for w in group),
                min(w.box[1] for w in group),
                max(w.box[2] for w in group),
                max(w.box[3] for w in group),
            ),  # fmt: skip
            min(w.score for w in group),
            tuple(group),
        )
        for group in groups
    ]


def _same_line(left: Word, right: Word, gap: float) -> bool:
    """Whether ``right`` continues the line that ``left`` ends (:func:`group_lines`)."""
    (ax0, ay0, ax1, ay1), (bx0, by0, _, by1) = left.box, right.box
    overlap = min(ay1, by1) - max(ay0, by0)
    height = max(ay1 - ay0, by1 - by0)
    beside = bx0 >= ax0 and bx0 - ax1 <= gap * height
    return beside and overlap >= 0.5 * min(ay1 - ay0, by1 - by0)


def require_reader() -> None:
    """:class:`ReaderDependencyError` naming the extra to install when the reader's models
    (``rapidocr-onnxruntime``) or their graph folding (``onnx``) are missing."""
    import importlib.util

    missing = [m for m in ("rapidocr_onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        raise ReaderDependencyError(
            f"the screen reader needs {' and '.join(missing)}; install it: {INSTALL_HINT}"
        )


@dataclass(frozen=True)
class _Engine:
    """PP-OCR's detector and recogniser (rapidocr's wrappers: their pre- and post-processing)."""

    text_det: Any
    text_rec: Any


def _engine(threads: int, fold: bool = True) -> _Engine:
    """The detector and recogniser, each ONNX session built once. (``RapidOCR()`` builds three:
    the angle classifier's too, even with ``use_cls=False``; folding then built the detector's
    and recogniser's again: a reader took 0.83 s to load where the two folded sessions take
    ~0.3 s, ``bench/reader.py --load``.) The folded graphs go to a private temporary folder for
    rapidocr's wrappers to load, since they take a model path, not bytes."""
    try:
        import rapidocr_onnxruntime  # noqa: F401  (first: a missing package fails here)
        from rapidocr_onnxruntime.ch_ppocr_det import TextDetector
        from rapidocr_onnxruntime.ch_ppocr_rec import TextRecognizer
        from rapidocr_onnxruntime.main import DEFAULT_CFG_PATH
        from rapidocr_onnxruntime.utils import read_yaml
        from rapidocr_onnxruntime.utils.parse_parameters import update_model_path

        if fold:
            import onnx  # noqa: F401
    except ImportError as e:
        raise ReaderDependencyError(
            f"the screen reader needs rapidocr-onnxruntime and onnx ({e}); install them: "
            f"{INSTALL_HINT}"
        ) from None
    config = update_model_path(read_yaml(DEFAULT_CFG_PATH))  # the wheel's models and options
    det, rec = config["Det"], config["Rec"]
    for part in (det, rec):
        part.update(intra_op_num_threads=threads, inter_op_num_threads=1)
    # No resizing by the detector below its limit: we upscale ourselves.
    det.update(limit_type="max", limit_side_len=4096)
    with tempfile.TemporaryDirectory(prefix="pixelrl-reader-") as folder:
        if fold:
            for name, part in (("det.onnx", det), ("rec.onnx", rec)):
                path = Path(folder) / name
                path.write_bytes(_folded(part["model_path"]))
                part["model_path"] = str(path)
        return _Engine(TextDetector(det), TextRecognizer(rec))  # sessions hold the graphs


@functools.lru_cache(maxsize=4)
def _folded(model_path: str) -> bytes:
    """The wheel's model at ``model_path`` with PP-OCR's elementwise chains folded
    (:mod:`pixelrl.vision.onnx_fold`: the same outputs, ~1.8x the recogniser's speed); kept for
    the process, so that a second reader does not fold again."""
    from pixelrl.vision.onnx_fold import fold_model

    return fold_model(model_path)


def as_rgb(image: Any) -> np.ndarray:
    """An H×W×3 uint8 RGB array from an array (H×W grey, H×W×3 RGB, H×W×4 RGBA) or a PIL image;
    :class:`ReaderError` for anything else or an image larger than the bound."""
    if hasattr(image, "mode") and hasattr(image, "convert"):  # PIL
        image = np.asarray(image.convert("RGB"))
    array = np.asarray(image)
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise ReaderError(f"expected an image array, got dtype {array.dtype}")
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=-1)
    if array.ndim != 3 or array.shape[-1] not in (3, 4):
        raise ReaderError(f"expected an H×W, H×W×3 or H×W×4 image, got shape {array.shape}")
    array = array[..., :3]
    h, w = array.shape[:2]
    if max(h, w) > MAX_SIDE or h * w > MAX_PIXELS:
        raise ReaderError(
            f"image {w}x{h} is too large to read (at most {MAX_SIDE} px a side and "
            f"{MAX_PIXELS // 1_000_000} Mpx); downscale it first"
        )
    if array.dtype != np.uint8:
        if np.issubdtype(array.dtype, np.floating) and array.size and float(array.max()) <= 1.0:
            array = array * 255.0
        array = np.clip(np.nan_to_num(array), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(array)


def _tiles(size: int) -> list[tuple[int, int, tuple[float, float]]]:
    """Overlapping spans ``(start, end, (keep_from, keep_to))`` covering ``0..size``: spans of
    at most :data:`TILE`, each keeping the words centred in its part of the overlaps."""
    count = max(1, -(-(size - TILE_OVERLAP) // (TILE - TILE_OVERLAP)))
    length = min(size, -(-(size + (count - 1) * TILE_OVERLAP) // count))
    starts = [round(i * (size - length) / max(count - 1, 1)) for i in range(count)]
    spans = []
    for i, start in enumerate(starts):
        keep_from = 0.0 if i == 0 else (starts[i - 1] + length + start) / 2
        keep_to = float(size) if i == count - 1 else (start + length + starts[i + 1]) / 2
        spans.append((start, start + length, (keep_from, keep_to)))
    return spans


def frame_key(image: np.ndarray) -> tuple:
    """The cache key of a frame: its shape, dtype and a hash of its bytes."""
    digest = hashlib.blake2b(np.ascontiguousarray(image).data, digest_size=16).digest()
    return image.shape, str(image.dtype), digest


class Memo(OrderedDict):
    """Results remembered by the pixels they were computed from (:func:`frame_key`), at most
    ``size`` (0: none), the least recently used dropped first; hits and misses counted. Its own
    lock: a reader is shared by threads (env workers); a result is computed outside it."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size, self.hits, self.misses = int(size), 0, 0
        self._lock = threading.Lock()

    def recall(self, pixels: np.ndarray, compute: Callable[[], Any]) -> Any:
        """``compute()``, or what it gave before for the same pixels."""
        if not self.size:
            return compute()
        key = frame_key(pixels)
        with self._lock:
            if key in self:
                self.move_to_end(key)
                self.hits += 1
                return self[key]
        value = compute()
        with self._lock:
            self.misses += 1
            self[key] = value
            while len(self) > self.size:
                self.popitem(last=False)
        return value


class ScreenReader:
    """Reads words off screenshots (module doc).

    Args:
        upscale: factor the image is enlarged by before its lines are cut out and recognised;
            None: 3 when the longer side is at most 400 px, else 1.
        detect_upscale: factor the image is enlarged by before the detector looks for lines;
            None: 2 when the longer side is at most 400 px, else 1. At the native 160x210 the
            detector clipped or missed MiniWoB++'s short labels next to a checkbox or radio
            button (`Ab` read as `A`, `tl` not found): on 54 screens of six tasks fuzzy recall
            went 0.962 -> 0.992 at 2 (click-option 0.911 -> 1.000, click-checkboxes 0.897 ->
            0.989); 1.5 gave 0.979, 2.5 0.966, 3 0.932. It costs ~+50% a small screen.
        text_score: lines whose recognition confidence is below it are dropped (0..1).
        word_score: words whose mean character confidence is below it are dropped.
        gap: a gap in a line's ink wider than ``gap`` × the line's ink height splits words.
        stretch: a line is widened by this factor before the recogniser reads it. PP-OCR's
            recogniser reads narrow small fonts better a little wide: on 48 MiniWoB++ screens
            (160x210) word recall went 0.862 -> 0.937 at 1.2 (fuzzy 0.894 -> 0.965), 1.3 was
            no better and 1.8 worse; the desktop's 320x240 screens moved 0.902 -> 0.892, its
            1280x800 ones not at all. The cost grows with it (~+14%). That was with the
            detector at 1x and all 48 rows; with the detector at 2x and ``rows`` 40, 1.0 reads
            as well or better (the default since issue 57; ``docs/results/reader.md``).
        rows: rows of each line the recogniser reads (8..48, a multiple of 8). A line is scaled
            as the model expects (its crop's height to :data:`MODEL_ROWS`) and then cut to
            ``rows`` rows centred on its ink: the detector's box pads a line above and below
            (a third of a MiniWoB++ line's rows hold no ink), and the recogniser's cost grows
            with its rows as with its columns. 48 reads the whole crop (before issue 57).
            With ``stretch`` 1.0, 40 rows read 64 held-out MiniWoB++ screens with recall 0.948
            -> 0.958 and precision 0.834 -> 0.841 at ~0.8x the CPU time; 32 rows lose words.
        cache_size: frames remembered (0: no cache).
        line_cache_size: text lines remembered, by their pixels (0: none). A multi-step task's
            screens keep most of their lines while one thing changes (a tick, an opened
            section): on 175 recorded MiniWoB++ oracle frames of six tasks, 903 of 1,747 line
            crops had been read before. The recogniser is deterministic, so a remembered line
            reads exactly as a fresh one (``bench/reader_line_cache.py``).
        threads: ONNX Runtime threads (intra-op).
        fold: run the models with their elementwise chains folded into the convs
            (:mod:`pixelrl.vision.onnx_fold`; the same words, a MiniWoB++ screen 160 -> 100 ms on
            one core); False runs the wheel's graphs as they are.
    """

    def __init__(
        self,
        upscale: float | None = None,
        detect_upscale: float | None = None,
        text_score: float = 0.5,
        word_score: float = 0.3,
        gap: float = 0.33,
        stretch: float = 1.0,
        rows: int = 40,
        cache_size: int = 64,
        threads: int = 1,
        fold: bool = True,
        line_cache_size: int = 2048,
    ) -> None:
        for name, value in (("upscale", upscale), ("detect_upscale", detect_upscale)):
            if value is not None and not (0.25 <= float(value) <= 8):
                raise ReaderError(f"{name} must be a number in [0.25, 8], got {value!r}")
        if not 0.5 <= float(stretch) <= 3:
            raise ReaderError(f"stretch must be a number in [0.5, 3], got {stretch!r}")
        whole = isinstance(rows, (int, np.integer)) and not isinstance(rows, bool)
        if not (whole and 8 <= rows <= MODEL_ROWS and rows % 8 == 0):
            raise ReaderError(f"rows must be a multiple of 8 in [8, {MODEL_ROWS}], got {rows!r}")
        for name, value in (("text_score", text_score), ("word_score", word_score)):
            if not 0 <= float(value) <= 1:
                raise ReaderError(f"{name} must be in [0, 1], got {value!r}")
        if int(threads) < 1 or int(cache_size) < 0 or int(line_cache_size) < 0:
            raise ReaderError(
                "threads must be >= 1, cache_size and line_cache_size >= 0, got "
                f"{threads}, {cache_size}, {line_cache_size}"
            )
        self.upscale = None if upscale is None else float(upscale)
        self.detect_upscale = None if detect_upscale is None else float(detect_upscale)
        self.text_score = float(text_score)
        self.word_score = float(word_score)
        self.gap = float(gap)
        self.stretch = float(stretch)
        self.rows = int(rows)
        self.cache_size = int(cache_size)
        self.line_cache_size = int(line_cache_size)
        self.threads = int(threads)
        self.fold = bool(fold)
        self._engine = None
        self._cache = Memo(self.cache_size)  # frames -> their words
        self._lines = Memo(self.line_cache_size)  # line crops -> their recognition

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses

    @property
    def line_hits(self) -> int:
        return self._lines.hits

    @property
    def line_misses(self) -> int:
        return self._lines.misses

    # -- public -----------------------------------------------------------------------------
    def read(self, image: Any) -> list[Word]:
        """The words on ``image`` (H×W×3 uint8 RGB, grey, RGBA or PIL), top to bottom, left to
        right; ``[]`` for an empty or single-colour image."""
        rgb = as_rgb(image)
        if rgb.size == 0 or min(rgb.shape[:2]) < 2 or int(rgb.min()) == int(rgb.max()):
            return []
        read = self._read_tiled if max(rgb.shape[:2]) > TILE else self._read
        return list(self._cache.recall(rgb, lambda: tuple(read(rgb))))

    def scale_for(self, width: int, height: int) -> float:
        if self.upscale is not None:
            return self.upscale
        return 3.0 if max(width, height) <= SMALL_SIDE else 1.0

    def detect_scale_for(self, width: int, height: int) -> float:
        if self.detect_upscale is not None:
            return self.detect_upscale
        return 2.0 if max(width, height) <= SMALL_SIDE else 1.0

    def warm_up(self) -> ScreenReader:
        """Load the models now (the first read otherwise pays for it)."""
        self._load()
        return self

    # -- internals --------------------------------------------------------------------------
    def _load(self):
        if self._engine is None:
            self._engine = _engine(self.threads, self.fold)
        return self._engine

    def _read_tiled(self, rgb: np.ndarray) -> list[Word]:
        """The words of a large image, read in overlapping tiles (see :data:`TILE`)."""
        h, w = rgb.shape[:2]
        s, d = self.scale_for(w, h), self.detect_scale_for(w, h)
        words: list[Word] = []
        for y0, y1, keep_y in _tiles(h):
            for x0, x1, keep_x in _tiles(w):
                for word in self._read(rgb[y0:y1, x0:x1], s, d):
                    bx0, by0, bx1, by1 = word.box
                    cx, cy = x0 + (bx0 + bx1) / 2, y0 + (by0 + by1) / 2
                    if keep_x[0] <= cx < keep_x[1] and keep_y[0] <= cy < keep_y[1]:
                        box = (bx0 + x0, by0 + y0, bx1 + x0, by1 + y0)
                        words.append(Word(word.text, box, word.score))
        return _reading_order(words)

    def _read(self, rgb: np.ndarray, s: float | None = None, d: float | None = None) -> list[Word]:
        import cv2

        engine = self._load()
        h, w = rgb.shape[:2]
        s = self.scale_for(w, h) if s is None else s
        bgr = np.ascontiguousarray(rgb[..., ::-1])  # the models were trained on BGR
        # The detector finds line boxes at its own scale (small screens: 2x, where short words
        # beside a widget are found whole; 3x costs more and finds less); the lines are cut from
        # the image upscaled for the recogniser.
        d = self.detect_scale_for(w, h) if d is None else d
        det_in = bgr
        if d != 1.0:
            det_in = cv2.resize(bgr, (round(w * d), round(h * d)), interpolation=cv2.INTER_CUBIC)
        dh, dw = det_in.shape[:2]
        if min(dh, dw) < 32:  # the detector wants some room
            det_in = cv2.copyMakeBorder(det_in, 0, max(0, 32 - dh), 0, max(0, 32 - dw),
                                        cv2.BORDER_REPLICATE)  # fmt: skip
        boxes = _detect(engine, det_in)
        if boxes is None or len(boxes) == 0:
            return []
        big = bgr
        if s != 1.0:
            big = cv2.resize(bgr, (round(w * s), round(h * s)), interpolation=cv2.INTER_CUBIC)
        H, W = big.shape[:2]
        rects = []
        for quad in boxes:
            q = np.asarray(quad, dtype=np.float32) * (s / d)
            x0, y0 = np.floor(q.min(0)).astype(int)
            x1, y1 = np.ceil(q.max(0)).astype(int)
            x0, y0, x1, y1 = max(0, x0), max(0, y0), min(W, x1), min(H, y1)
            if x1 - x0 >= 2 and y1 - y0 >= 2:
                rects.append((x0, y0, x1, y1))
        words: list[Word] = []
        for rect in rects:
            crop = big[rect[1] : rect[3], rect[0] : rect[2]]
            ink = ink_mask(crop)
            result = self._recognise_line(engine, crop, ink)
            text, score = result[0], float(result[1])
            if not text.strip() or score < self.text_score:
                continue
            pieces = split_line(crop, text, result[2], self.gap, ink)
            for wtext, (bx0, by0, bx1, by1), wscore in pieces:
                if wscore < self.word_score:
                    continue
                x0 = min(int(np.floor((rect[0] + bx0) / s)), w - 1)
                y0 = min(int(np.floor((rect[1] + by0) / s)), h - 1)
                x1 = max(min(int(np.ceil((rect[0] + bx1) / s)), w), x0 + 1)
                y1 = max(min(int(np.ceil((rect[1] + by1) / s)), h), y0 + 1)
                words.append(Word(wtext, (x0, y0, x1, y1), wscore))
        return _reading_order(words)

    def _recognise_line(self, engine, crop: np.ndarray, ink: np.ndarray) -> tuple:
        """:func:`_recognise` of one line crop, remembered by its pixels (``line_cache_size``)."""
        return self._lines.recall(
            crop, lambda: tuple(_recognise(engine, crop, self.stretch, self.rows, ink))
        )


def _detect(engine, bgr: np.ndarray):
    """The detector's line boxes (quads) of ``bgr``: rapidocr's ``TextDetector.__call__`` step by
    step, but for its normalisation, which ran in float64 (~5 ms a MiniWoB++ screen, a twentieth
    of its reading); a table of the 256 values it can give, computed by the same operations,
    gives the same float32 input."""
    det = engine.text_det
    pre = det.get_preprocess(max(bgr.shape[:2]))
    resized = pre.resize(bgr)
    if resized is None:
        return None
    table = _normalised(pre.scale, tuple(pre.mean), tuple(pre.std))
    batch = table[resized, np.arange(3)].transpose(2, 0, 1)[None]
    preds = det.infer(np.ascontiguousarray(batch))[0]
    boxes, _ = det.postprocess_op(preds, bgr.shape[:2])
    return det.filter_tag_det_res(boxes, bgr.shape[:2])


@functools.lru_cache(maxsize=4)
def _normalised(scale: float, mean: tuple, std: tuple) -> np.ndarray:
    """256×3 float32: what rapidocr's ``DetPreProcess.normalize`` makes of each byte value in
    each channel (float32 times ``scale``, then float64 ``- mean`` and ``/ std``)."""
    values = np.arange(256, dtype=np.float32)[:, None] * scale
    return ((values - np.array(mean)) / np.array(std)).astype(np.float32)


def _recognise(engine, crop: np.ndarray, stretch: float = 1.0, rows: int = MODEL_ROWS, ink=None):
    """``(text, score, word_info)`` of one line crop (BGR): the recogniser run on the crop
    alone at its own width times ``stretch`` (rapidocr pads every line of a batch to the widest,
    at least 320 columns; the model's cost grows with the width; reading lines side by side in
    one call was slower still, 0.16 s against 0.13 s a MiniWoB++ screen, and so was a batch of a
    screen's lines padded to one width), on ``rows`` of its rows centred on the line's ``ink``
    (:func:`ink_mask` of the crop)."""
    import cv2

    rec = engine.text_rec
    h, w = crop.shape[:2]
    width = max(16, int(np.ceil(MODEL_ROWS * stretch * w / h)))
    padded = -(-width // 8) * 8
    line = cv2.resize(crop, (width, MODEL_ROWS))
    if rows < MODEL_ROWS:
        top = _band_top(ink if ink is not None else ink_mask(crop), rows)
        line = line[top : top + rows]
    batch = np.zeros((1, 3, rows, padded), dtype=np.float32)
    batch[0, :, :, :width] = line.astype(np.float32).transpose(2, 0, 1) / 127.5 - 1.0
    preds = rec.session(batch)[0]
    return rec.postprocess_op(preds, True, wh_ratio_list=[width / MODEL_ROWS],
                              max_wh_ratio=padded / MODEL_ROWS)[0]  # fmt: skip


def _band_top(ink: np.ndarray, rows: int) -> int:
    """The first of ``rows`` rows (of the line scaled to :data:`MODEL_ROWS`) centred on the
    ink's rows (the crop's middle when it holds none)."""
    filled = np.flatnonzero(ink.any(axis=1))
    middle = (filled[0] + filled[-1] + 1) / 2 if len(filled) else ink.shape[0] / 2
    centre = middle * MODEL_ROWS / ink.shape[0]
    return int(np.clip(round(centre - rows / 2), 0, MODEL_ROWS - rows))


def _reading_order(words: list[Word]) -> list[Word]:
    """Top to bottom by rows (:func:`_row_of`), left to right in a row."""
    rows = {id(word): _row_of(word, words) for word in words}
    return sorted(words, key=lambda x: (rows[id(x)], x.box[0]))


def _row_of(word: Word, words: list[Word]) -> int:
    """A reading-order row: the top of the highest word whose vertical span holds this word's
    centre (words on one line sort left to right)."""
    cy = (word.box[1] + word.box[3]) / 2
    return min(o.box[1] for o in words if o.box[1] <= cy < o.box[3]) if words else word.box[1]


def ink_mask(crop: np.ndarray) -> np.ndarray:
    """Ink pixels of a text-line crop: those far from the background (the crop border's median
    colour), with a threshold halfway to the farthest pixel."""
    grey = crop.astype(np.float32).mean(axis=2)
    border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
    distance = np.abs(grey - float(np.median(border)))
    top = float(distance.max())
    if top < 24:
        return np.zeros(grey.shape, dtype=bool)
    return _line_body(distance > max(24.0, 0.45 * top))


def _line_body(ink: np.ndarray) -> np.ndarray:
    """``ink`` without the bands of rows that blank rows cut off from the line's body (its band
    with the most ink) by more than a quarter of the body's height: a neighbouring line's or
    widget's edge that the detector's padded box took in. An i's dot or an accent sits closer
    and stays. Left in, such a band stretched a MiniWoB++ label's box down over the next
    checkbox, 19 px below, so that a named label marked its neighbour too."""
    rows = ink.sum(axis=1)
    filled = np.flatnonzero(rows)
    if len(filled) == 0:
        return ink
    breaks = np.flatnonzero(np.diff(filled) > 1)
    starts = np.concatenate([[filled[0]], filled[breaks + 1]])
    ends = np.concatenate([filled[breaks], [filled[-1]]])  # inclusive
    if len(starts) == 1:
        return ink
    body = int(np.argmax([rows[a : b + 1].sum() for a, b in zip(starts, ends)]))
    near = max(2.0, 0.25 * (ends[body] - starts[body] + 1))
    out = ink.copy()
    top, bottom = starts[body], ends[body]
    for k in range(body - 1, -1, -1):  # grow upwards while the next band is near
        if top - ends[k] - 1 > near:
            out[: ends[k] + 1] = False
            break
        top = starts[k]
    for k in range(body + 1, len(starts)):
        if starts[k] - bottom - 1 > near:
            out[starts[k] :] = False
            break
        bottom = ends[k]
    return out


def split_line(
    crop: np.ndarray, text: str, word_info: list, gap: float = 0.33, ink: np.ndarray | None = None
) -> list[tuple[str, tuple[int, int, int, int], float]]:
    """Split one recognised line into words: ``[(text, (x0, y0, x1, y1) in crop pixels, score)]``.

    ``word_info`` is rapidocr's ``[columns, words, word_columns, states, confidences]`` (CTC
    columns of each character, scaled to the crop's width). A word ends at a space the recogniser
    read or where the ink between two characters has an empty run wider than ``gap`` × the
    line's ink height. ``ink``: the crop's :func:`ink_mask`, when the caller has it."""
    h, w = crop.shape[:2]
    columns, _, word_cols, _, confs = word_info
    cols = [c for group in word_cols for c in group]
    chars = [c for group in word_info[1] for c in group]
    if len(chars) != len(text) or len(cols) != len(chars) or not columns:
        # rapidocr groups the text's characters; if they disagree keep the line whole
        return [(text.strip(), (0, 0, w, h), float(np.mean(confs) if len(confs) else 0.0))]
    centres = [(c + 0.5) * w / float(columns) for c in cols]
    confs = list(confs) + [0.0] * (len(chars) - len(confs))
    ink = ink_mask(crop) if ink is None else ink
    ink_cols = ink.any(axis=0)
    ink_rows = np.where(ink.any(axis=1))[0]
    height = (ink_rows[-1] - ink_rows[0] + 1) if len(ink_rows) else h
    min_gap = max(2.0, gap * height)
    # boundaries between consecutive characters: (index, x where the cut goes)
    groups: list[list[int]] = [[]]
    prev = None
    for i, ch in enumerate(chars):
        if ch.isspace():
            if groups[-1]:
                groups.append([])  # the cut goes at the widest gap, below
            continue
        if prev is not None and groups[-1]:
            a, b = int(np.floor(centres[prev])), int(np.ceil(centres[i]))
            if _widest_gap(ink_cols, a, b)[0] >= min_gap:
                groups.append([])
        groups[-1].append(i)
        prev = i
    groups = [g for g in groups if g]
    words = []
    bounds = []
    for k, g in enumerate(groups):
        left = 0.0 if k == 0 else None
        right = float(w) if k == len(groups) - 1 else None
        bounds.append([left, right, g])
    for k in range(len(groups) - 1):  # cut between group k and k+1
        a, b = centres[groups[k][-1]], centres[groups[k + 1][0]]
        size, best_at = _widest_gap(ink_cols, int(np.floor(a)), int(np.ceil(b)))
        if not size:
            best_at = (a + b) / 2
        bounds[k][1] = best_at
        bounds[k + 1][0] = best_at
    for left, right, g in bounds:
        x0, x1 = int(max(0, np.floor(left))), int(min(w, np.ceil(right)))
        piece = ink[:, x0:x1]
        xs = np.where(piece.any(axis=0))[0]
        ys = np.where(piece.any(axis=1))[0]
        if len(xs) and len(ys):
            box = (x0 + int(xs[0]), int(ys[0]), x0 + int(xs[-1]) + 1, int(ys[-1]) + 1)
        else:
            box = (x0, 0, max(x1, x0 + 1), h)
        word = "".join(chars[i] for i in g)
        words.append((word, box, float(np.mean([confs[i] for i in g]))))
    return words


def _widest_gap(ink_cols: np.ndarray, a: int, b: int) -> tuple[int, float]:
    """The widest run of ink-free columns in ``[a, b)``: its width and its middle x."""
    run, best, middle = 0, 0, (a + b) / 2
    for x in range(max(a, 0), min(b, len(ink_cols))):
        run = run + 1 if not ink_cols[x] else 0
        if run > best:
            best, middle = run, x + 1 - run / 2
    return best, middle


class SetOfMarks:
    """A screen parse for a vision-language prompt (Set-of-Mark style): the words the reader
    sees, numbered top to bottom, each with its centre written as the policy writes a click's
    point (``point_text(x, y, screen_size)``, e.g. the GUI codec's), so that the model can copy
    it into its answer::

        Screen text: [1] "File" (25,18) [2] "Submit" (512,330) ...

    Pixels only, like the reader. ``max_words`` bounds the prompt (the first words in reading
    order are kept). :meth:`boxes` gives the same marks' boxes in the same order: what a mark
    action (``click(mark=2)``, :mod:`pixelrl.envs.gui_action.marks`) names. Instances share one
    reader by default (:func:`shared_reader`), so a screen is read once whoever asks."""

    def __init__(self, point_text, reader: ScreenReader | None = None, max_words: int = 40) -> None:
        if int(max_words) < 1:
            raise ReaderError(f"max_words must be >= 1, got {max_words!r}")
        self.point_text = point_text
        self.reader = reader if reader is not None else shared_reader()
        self.max_words = int(max_words)

    def words(self, image: Any) -> list[Word]:
        """The marked words of ``image``: mark N is ``words(image)[N - 1]``."""
        return self.reader.read(as_rgb(image))[: self.max_words]

    def boxes(self, image: Any) -> list[tuple[int, int, int, int]]:
        """Each mark's box in screen pixels, mark 1 first."""
        return [tuple(int(v) for v in word.box) for word in self.words(image)]

    def __call__(self, image: Any) -> str:
        rgb = as_rgb(image)
        screen = (rgb.shape[1], rgb.shape[0])
        marks = []
        for i, word in enumerate(self.words(rgb), start=1):
            x0, y0, x1, y1 = word.box
            centre = self.point_text((x0 + x1 - 1) // 2, (y0 + y1 - 1) // 2, screen)
            # quoted as instructions quote a label ("Click the "Stop" button."), so that the
            # same word is the same tokens in both places, which a small model copies sooner
            marks.append(f'[{i}] "{word.text}" {centre}')
        return "Screen text: " + (" ".join(marks) if marks else "none")


_shared: dict[str, ScreenReader] = {}
_shared_lock = threading.Lock()


def shared_reader() -> ScreenReader:
    """The process's one screen reader (its ONNX models load once): the prompt's Set-of-Mark
    parse, a reward's marks, the pointer head's reader cells and the pointer policy's read maps
    of the same screen are one reading (its frame cache). Env threads may ask at once."""
    with _shared_lock:
        if "reader" not in _shared:
            _shared["reader"] = ScreenReader(cache_size=4096)
        return _shared["reader"]
