"""Verifiable GUI rewards: geometry (click-in-box, IoU, Gaussian, distance), text, format, success.

Every function takes a batch and returns a ``float64`` numpy array of shape ``(N,)``; none
raises on bad model output: an unparsable text, a missing point or a NaN coordinate scores 0.

Conventions (the same as :mod:`pixelrl.envs.gui` and :mod:`pixelrl.envs.gui_action`)
----------------------------------------------------------------
- A **point** ``(x, y)`` is in screen pixels, origin top-left, as an :class:`pixelrl.envs.gui_action.Action`
  holds it. It names the pixel ``(floor(x), floor(y))``; where a distance is measured, the point
  stands for that pixel's centre ``(floor(x) + 0.5, floor(y) + 0.5)``.
- A **box** ``[x0, y0, x1, y1]`` covers the pixels ``x0 <= x < x1`` and ``y0 <= y < y1``
  (x1, y1 exclusive), i.e. the continuous area ``[x0, x1) × [y0, y1)``. Its width is
  ``x1 - x0``, its area ``(x1 - x0)·(y1 - y0)`` pixels and its centre ``((x0+x1)/2, (y0+y1)/2)``.
  So a box ``[10, 20, 30, 40]`` holds pixel (10, 20) and pixel (29, 39), not pixel (30, 40).
- A box with zero or negative width or height is **empty**: it holds no point, its IoU with
  anything is 0 and its Gaussian / distance rewards are 0.
- A **non-finite** coordinate (NaN, inf) in a point or a box scores 0 in every geometric reward.
  Missing points are passed as NaN; :func:`parse_points` does that for unparsable text.

The composite recipes at the end (:func:`ui_r1_reward`, :func:`gui_r1_reward`,
:func:`gui_g1_reward`, :func:`se_gui_reward`, :func:`gui_g2_reward`) follow their papers
(UI-R1, GUI-R1, GUI-G1, SE-GUI, GUI-G²); each docstring gives the formula implemented here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from pixelrl.envs.gui_action import POINTER_KINDS, Action, ActionError
from pixelrl.envs.gui_action.codec import safe_parse

__all__ = [
    "safe_parse",
    "parse_points",
    "parse_boxes",
    "point_in_box",
    "box_iou",
    "gaussian_point_reward",
    "distance_reward",
    "box_size_reward",
    "format_reward",
    "action_kind_match",
    "token_f1",
    "task_success",
    "ui_r1_reward",
    "gui_r1_reward",
    "gui_g1_reward",
    "se_gui_reward",
    "gui_g2_reward",
]


# -- inputs -----------------------------------------------------------------------------------
def _as_points(points) -> np.ndarray:
    """(N, 2) float64; a ``None`` row (no point) becomes NaN."""
    if isinstance(points, np.ndarray):
        return points.astype(np.float64).reshape(-1, 2)
    rows = [(np.nan, np.nan) if p is None else p for p in points]
    arr = np.asarray(rows, dtype=np.float64).reshape(-1, 2) if rows else np.zeros((0, 2))
    return arr


def _as_boxes(boxes) -> np.ndarray:
    """(N, 4) float64; a ``None`` row (no box) becomes NaN."""
    if isinstance(boxes, np.ndarray):
        return boxes.astype(np.float64).reshape(-1, 4)
    rows = [(np.nan,) * 4 if b is None else b for b in boxes]
    arr = np.asarray(rows, dtype=np.float64).reshape(-1, 4) if rows else np.zeros((0, 4))
    return arr


def _check_batch(name_a: str, a: np.ndarray, name_b: str, b: np.ndarray) -> None:
    if len(a) != len(b):
        raise ValueError(
            f"{name_a} and {name_b} must have the same batch size, got {len(a)} and {len(b)}"
        )


def _valid_boxes(boxes: np.ndarray) -> np.ndarray:
    """Rows that are finite and non-empty (width > 0 and height > 0)."""
    finite = np.isfinite(boxes).all(axis=1)
    with np.errstate(invalid="ignore"):
        return finite & (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])


def _parse_all(texts, screen_size, coordinates) -> list[Action | None]:
    return [safe_parse(t, screen_size, coordinates)[0] for t in texts]


def parse_points(
    texts: Sequence[str], screen_size: tuple[int, int] | None = None, coordinates: str | None = None
) -> np.ndarray:
    """(N, 2) pixel points of the parsed actions; NaN where the text does not parse or its
    action has no point (``type``, ``key``, ...)."""
    actions = _parse_all(texts, screen_size, coordinates)
    return _as_points([a.point if a is not None else None for a in actions])


_BOX_IN_TEXT = re.compile(
    r"[\(\[]\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,"
    r"\s*(-?\d+(?:\.\d+)?)\s*[\)\]]"
)


def parse_boxes(
    texts: Sequence[str], screen_size: tuple[int, int] | None = None, coordinates: str = "pixels"
) -> np.ndarray:
    """(N, 4) boxes written in the texts as ``(x0,y0,x1,y1)`` or ``[x0,y0,x1,y1]`` (the first such
    group), NaN where there is none. ``coordinates`` maps them to pixels: ``"pixels"`` as they are,
    ``"relative1000"`` scales by W/1000 and H/1000, ``"unit"`` by W and H (needs ``screen_size``).
    Used by box-predicting recipes (GUI-G1); a point-only answer has no box."""
    out = np.full((len(texts), 4), np.nan)
    if coordinates not in ("pixels", "relative1000", "unit"):
        raise ValueError(f"coordinates must be pixels, relative1000 or unit, got {coordinates!r}")
    if coordinates != "pixels" and screen_size is None:
        raise ValueError(f"{coordinates} coordinates need screen_size")
    scale = {"pixels": 1.0, "relative1000": 1 / 1000, "unit": 1.0}[coordinates]
    for i, text in enumerate(texts):
        m = _BOX_IN_TEXT.search(text) if isinstance(text, str) else None
        if m is None:
            continue
        box = np.array([float(v) for v in m.groups()])
        if coordinates != "pixels":
            w, h = screen_size
            box = box * scale * np.array([w, h, w, h])
        out[i] = box
    return out


# -- geometry ---------------------------------------------------------------------------------
def point_in_box(points, boxes) -> np.ndarray:
    """Click-in-box (ScreenSpot accuracy): ``r = 1`` if ``x0 <= x < x1`` and ``y0 <= y < y1``,
    else 0.

    The test is on the pixel the point names, so ``x = x1`` (the exclusive edge) misses and
    ``x = x0`` hits; a float ``x = x1 - 0.25`` hits (it lies in pixel ``x1 - 1``). Empty boxes and
    non-finite coordinates give 0.
    """
    p, b = _as_points(points), _as_boxes(boxes)
    _check_batch("points", p, "boxes", b)
    with np.errstate(invalid="ignore"):
        px, py = np.floor(p[:, 0]), np.floor(p[:, 1])
        inside = (b[:, 0] <= px) & (px < b[:, 2]) & (b[:, 1] <= py) & (py < b[:, 3])
    return (inside & np.isfinite(p).all(axis=1) & _valid_boxes(b)).astype(np.float64)


def box_iou(boxes_a, boxes_b) -> np.ndarray:
    """Intersection over union of two batches of boxes, row by row.

    ``IoU = |A ∩ B| / |A ∪ B|`` with areas in pixels: ``|A| = (x1-x0)·(y1-y0)``,
    ``|A ∩ B| = max(0, min(x1) - max(x0)) · max(0, min(y1) - max(y0))``. Boxes that only touch
    (``a.x1 == b.x0``) share no pixel: IoU 0. An empty or non-finite box gives 0.
    """
    a, b = _as_boxes(boxes_a), _as_boxes(boxes_b)
    _check_batch("boxes_a", a, "boxes_b", b)
    valid = _valid_boxes(a) & _valid_boxes(b)
    with np.errstate(invalid="ignore"):
        iw = np.clip(np.minimum(a[:, 2], b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
        ih = np.clip(np.minimum(a[:, 3], b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
        inter = iw * ih
        area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
        area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        union = area_a + area_b - inter
    out = np.zeros(len(a))
    out[valid] = inter[valid] / union[valid]
    return out


def _centre_offsets(p: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Δx, Δy) from the box centre to the centre of the pixel the point names."""
    with np.errstate(invalid="ignore"):
        dx = np.floor(p[:, 0]) + 0.5 - (b[:, 0] + b[:, 2]) / 2
        dy = np.floor(p[:, 1]) + 0.5 - (b[:, 1] + b[:, 3]) / 2
    return dx, dy


def gaussian_point_reward(points, boxes, sigma_scale: float = 0.5) -> np.ndarray:
    """GUI-G²'s Gaussian point reward: ``r = exp(-½ ((Δx/σx)² + (Δy/σy)²))``.

    ``Δ`` runs from the box centre to the point's pixel centre, ``σx = sigma_scale · w``,
    ``σy = sigma_scale · h`` (``sigma_scale = ½``: σ is half the box size). So ``r = 1`` at the
    centre and ``r = exp(-½) ≈ 0.61`` on a vertical edge at mid-height (|Δx| = w/2 = σx). It is
    not 0 outside the box: near misses earn partial credit (the dense signal GUI-G² is after).
    Empty boxes and non-finite coordinates give 0.
    """
    p, b = _as_points(points), _as_boxes(boxes)
    _check_batch("points", p, "boxes", b)
    valid = _valid_boxes(b) & np.isfinite(p).all(axis=1)
    dx, dy = _centre_offsets(p, b)
    sx = sigma_scale * (b[:, 2] - b[:, 0])
    sy = sigma_scale * (b[:, 3] - b[:, 1])
    out = np.zeros(len(p))
    out[valid] = np.exp(-0.5 * ((dx[valid] / sx[valid]) ** 2 + (dy[valid] / sy[valid]) ** 2))
    return out


def distance_reward(points, boxes) -> np.ndarray:
    """SE-GUI's dense distance term: ``r = max(0, 1 - (d / d_max)²)``.

    ``d`` is the distance from the box centre to the point's pixel centre and
    ``d_max = ½ √(w² + h²)`` the half diagonal (the farthest a point inside the box can be), so
    ``r = 1`` at the centre, 0 at a corner and beyond. Empty boxes and non-finite coordinates give 0.
    """
    p, b = _as_points(points), _as_boxes(boxes)
    _check_batch("points", p, "boxes", b)
    valid = _valid_boxes(b) & np.isfinite(p).all(axis=1)
    dx, dy = _centre_offsets(p, b)
    d2 = dx**2 + dy**2
    d2_max = ((b[:, 2] - b[:, 0]) ** 2 + (b[:, 3] - b[:, 1]) ** 2) / 4
    out = np.zeros(len(p))
    out[valid] = np.clip(1 - d2[valid] / d2_max[valid], 0, None)
    return out


def box_size_reward(pred_boxes, gt_boxes) -> np.ndarray:
    """A box-size term (GUI-G1's guard against box-size reward hacking):
    ``r = min(wp/wg, wg/wp) · min(hp/hg, hg/hp)``.

    1 when the predicted box has the target's width and height, falling towards 0 as it grows
    or shrinks in either direction, so neither "tiny boxes for hits" nor "huge boxes for IoU"
    pays. (GUI-G1 states the constraint, not one formula; this is our symmetric-ratio reading.)
    Empty or non-finite boxes give 0.
    """
    a, b = _as_boxes(pred_boxes), _as_boxes(gt_boxes)
    _check_batch("pred_boxes", a, "gt_boxes", b)
    valid = _valid_boxes(a) & _valid_boxes(b)
    out = np.zeros(len(a))
    wp, hp = (a[valid, 2] - a[valid, 0]), (a[valid, 3] - a[valid, 1])
    wg, hg = (b[valid, 2] - b[valid, 0]), (b[valid, 3] - b[valid, 1])
    out[valid] = np.minimum(wp / wg, wg / wp) * np.minimum(hp / hg, hg / hp)
    return out


# -- text -------------------------------------------------------------------------------------
def format_reward(
    texts: Sequence[str], screen_size: tuple[int, int] | None = None, coordinates: str | None = None
) -> np.ndarray:
    """``r = 1`` if the text parses into exactly one valid action with
    :func:`pixelrl.envs.gui_action.parse_action` (on screen, when ``screen_size`` is given), else 0."""
    return np.array([float(a is not None) for a in _parse_all(texts, screen_size, coordinates)])


def _kind(a: Action | str | None) -> str | None:
    return a.kind if isinstance(a, Action) else a


def action_kind_match(
    predicted: Sequence[Action | str | None], target: Sequence[Action | str]
) -> np.ndarray:
    """``r = 1`` if the predicted action kind equals the target kind (``click`` ≠
    ``double_click``), else 0; ``None`` (no parsed action) gives 0. Items are actions or kinds."""
    _check_batch("predicted", predicted, "target", target)
    return np.array(
        [float(p is not None and _kind(p) == _kind(t)) for p, t in zip(predicted, target)]
    )


def _tokens(text: str | None) -> list[str]:
    return (text or "").lower().split()


def token_f1(predicted: Sequence[str | None], target: Sequence[str]) -> np.ndarray:
    """SQuAD-style token F1 of typed text: lower-cased, split on whitespace,
    ``P = |overlap| / |pred|``, ``R = |overlap| / |target|``, ``F1 = 2PR / (P + R)`` where the
    overlap counts shared tokens with multiplicity. Both empty: 1; exactly one empty: 0."""
    _check_batch("predicted", predicted, "target", target)
    out = np.zeros(len(target))
    for i, (p, t) in enumerate(zip(predicted, target)):
        pt, tt = _tokens(p), _tokens(t)
        if not pt and not tt:
            out[i] = 1.0
            continue
        overlap = sum((Counter(pt) & Counter(tt)).values())
        if overlap:
            precision, recall = overlap / len(pt), overlap / len(tt)
            out[i] = 2 * precision * recall / (precision + recall)
    return out


def task_success(outcomes: Sequence[bool | dict | None]) -> np.ndarray:
    """``r = 1`` for a successful episode, else 0. Items are booleans or final ``info`` dicts
    (their ``success`` key; missing counts as failure)."""
    out = []
    for o in outcomes:
        if isinstance(o, dict):
            o = o.get("success", False)
        out.append(float(bool(o) if o is not None and not _is_nan(o) else False))
    return np.array(out, dtype=np.float64)


def _is_nan(v: object) -> bool:
    return isinstance(v, float) and v != v


# -- composite recipes ------------------------------------------------------------------------
def _target_points_in_box(actions, target_boxes) -> np.ndarray:
    return point_in_box([a.point if a is not None else None for a in actions], target_boxes)


def _argument_accuracy(
    actions, target_kinds, target_boxes, target_texts, target_keys
) -> np.ndarray:
    """1 where the action is right, judged by its target's kind: a pointer action must land in the
    box, a ``type`` must reach token-F1 >= 0.5, a ``key``/``hotkey`` must press the same keys;
    ``wait``/``done``/``fail`` only need the kind. Kind mismatches are 0."""
    n = len(actions)
    kinds_ok = action_kind_match(actions, target_kinds)
    in_box = (
        _target_points_in_box(actions, target_boxes) if target_boxes is not None else np.zeros(n)
    )
    texts = target_texts if target_texts is not None else [""] * n
    f1 = token_f1([a.text if a is not None else None for a in actions], texts)
    out = np.zeros(n)
    for i, (a, kind) in enumerate(zip(actions, target_kinds)):
        if not kinds_ok[i]:
            continue
        if kind in POINTER_KINDS:
            out[i] = in_box[i]
        elif kind == "type":
            out[i] = float(f1[i] >= 0.5)
        elif kind in ("key", "hotkey"):
            want = _canonical_keys(kind, target_keys[i] if target_keys is not None else None)
            out[i] = float(want is not None and want == a.keys)
        else:
            out[i] = 1.0
    return out


def _canonical_keys(kind: str, keys) -> tuple[str, ...] | None:
    """The target's keys as an action of ``kind`` would hold them (aliases, chord order)."""
    if keys is None:
        return None
    try:
        return Action(kind, keys=(keys,) if isinstance(keys, str) else tuple(keys)).keys
    except ActionError as e:
        raise ValueError(f"target_keys: {e}") from None


def _click_kinds(n: int, target_kinds) -> list[str]:
    return list(target_kinds) if target_kinds is not None else ["click"] * n


def ui_r1_reward(
    texts: Sequence[str],
    target_boxes,
    target_kinds: Sequence[str] | None = None,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | None = None,
) -> np.ndarray:
    """UI-R1: ``r = R_type + R_coord + R_format`` (each 0/1, so r ∈ [0, 3]).

    ``R_type``: the action kind matches; ``R_coord``: the action's point lies in the target box
    (a click-in-box; 0 for actions without a point); ``R_format``: the text parses.
    ``target_kinds`` defaults to ``click`` for every item.
    """
    actions = _parse_all(texts, screen_size, coordinates)
    kinds = _click_kinds(len(texts), target_kinds)
    r_type = action_kind_match(actions, kinds)
    r_coord = _target_points_in_box(actions, target_boxes)
    r_format = np.array([float(a is not None) for a in actions])
    return r_type + r_coord + r_format


def gui_r1_reward(
    texts: Sequence[str],
    target_boxes=None,
    target_kinds: Sequence[str] | None = None,
    target_texts: Sequence[str] | None = None,
    target_keys: Sequence[Sequence[str] | None] | None = None,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | None = None,
) -> np.ndarray:
    """GUI-R1: ``r = 0.8 · R_accuracy + 0.2 · R_format``.

    ``R_accuracy`` = 1 when the kind matches and its argument is right: pointer actions land in
    the target box, typed text reaches token-F1 ≥ 0.5 against ``target_texts``, keys equal
    ``target_keys``; ``wait``/``done``/``fail`` need only the kind. ``R_format``: the text parses.
    """
    actions = _parse_all(texts, screen_size, coordinates)
    kinds = _click_kinds(len(texts), target_kinds)
    acc = _argument_accuracy(actions, kinds, target_boxes, target_texts, target_keys)
    fmt = np.array([float(a is not None) for a in actions])
    return 0.8 * acc + 0.2 * fmt


def gui_g1_reward(
    texts: Sequence[str],
    target_boxes,
    screen_size: tuple[int, int] | None = None,
    coordinates: str = "pixels",
) -> np.ndarray:
    """GUI-G1 (box prediction): ``r = R_hit + 0.25 · IoU + 0.125 · R_box``.

    The answer holds a box ``(x0,y0,x1,y1)``; ``R_hit``: its centre lies in the target box;
    ``IoU``: :func:`box_iou` with the target; ``R_box``: :func:`box_size_reward`. A text without
    a box scores 0. ``r ∈ [0, 1.375]``.
    """
    pred = parse_boxes(texts, screen_size, coordinates)
    centres = np.stack([(pred[:, 0] + pred[:, 2]) / 2, (pred[:, 1] + pred[:, 3]) / 2], axis=1)
    gt = _as_boxes(target_boxes)
    hit = point_in_box(centres, gt) * _valid_boxes(pred)
    return hit + 0.25 * box_iou(pred, gt) + 0.125 * box_size_reward(pred, gt)


def se_gui_reward(
    texts: Sequence[str],
    target_boxes,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | None = None,
) -> np.ndarray:
    """SE-GUI: ``r = R_in_box + max(0, 1 - (d / d_max)²)`` (see :func:`distance_reward`),
    ``r ∈ [0, 2]``; unparsable text scores 0."""
    points = parse_points(texts, screen_size, coordinates)
    return point_in_box(points, target_boxes) + distance_reward(points, target_boxes)


def gui_g2_reward(
    texts: Sequence[str],
    target_boxes,
    screen_size: tuple[int, int] | None = None,
    coordinates: str | None = None,
    sigma_scale: float = 0.5,
) -> np.ndarray:
    """GUI-G²: the Gaussian point reward ``exp(-½((Δx/σx)² + (Δy/σy)²))`` with σ = ½ box size
    (:func:`gaussian_point_reward`), ``r ∈ [0, 1]``; unparsable text scores 0."""
    points = parse_points(texts, screen_size, coordinates)
    return gaussian_point_reward(points, target_boxes, sigma_scale)
