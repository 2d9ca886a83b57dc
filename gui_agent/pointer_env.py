"""The pixel pointer policy's view of a GUI env: a small image, hashed words, a factored action.

:class:`PointerEnv` wraps any pixelrl GUI env (``screenshot`` + ``instruction`` observations,
:class:`pixelrl.envs.gui_action.Action` actions) so that the shared PPO storage can hold it:

- observation ``image``: the screenshot resized to ``spec.image_size`` (uint8 h×w×3, via
  :func:`pixelrl.vision.image.resize`, which also gives the exact map back to screen pixels);
  ``instruction``: its words as ids (int64, ``spec.max_words``; 0 pads); with ``spec.reader``
  also ``read``: the screen reader's named-word and text maps (uint8 h×w×2, :mod:`.read_maps`);
- action: ``MultiDiscrete([kind, cell, offset, text, key])``, the sample of the policy's heads
  (with ``drag`` among the kinds, ``[..., end_cell, end_offset]``: where the drag ends).
  ``kind`` indexes ``spec.kinds``; a pointer action lands in grid ``cell`` (row-major over the
  ``spec.grid`` cells of ``spec.cell`` image pixels each) at sub-cell ``offset`` (row-major over
  ``spec.offsets`` × ``spec.offsets`` positions); ``type`` writes ``spec.texts[text]``; ``key``
  presses ``spec.keys[key]`` (``"ctrl+a"`` is a hotkey); ``wait`` lets the page move on (a
  section sliding open); ``drag`` presses at the point and releases at the end point (a slider,
  a sortable list, a text selection); ``scroll_up`` / ``scroll_down`` turn the wheel
  :data:`SCROLL_NOTCHES` notches at the point (a recorded scroll keeps its direction only).
  Parts the kind does not use are ignored.

A text of the form ``{field:N}`` types the episode's N-th task field (``info["fields"]`` at
reset: MiniWoB++'s parse of its instruction, such as a name to enter or a password): the
"type from a task field" action of CC-Net (Humphreys et al., 2022), for tasks whose text to type
is drawn fresh each episode and so is in no fixed vocabulary. ``{field:N:upper}`` and
``{field:N:lower}`` type it in one case (enter-text-2: "Type "KASIE" in all lower case letters");
any other text in braces is refused, so a misspelt template is not typed as it stands.

Words are hashed, not looked up: a word's id is ``1 + crc32(word) mod (buckets - 1)`` over the
lower-cased words of the text (quotes and punctuation split words). That is a vocabulary built
from task instructions with nothing to keep in sync between envs, policies and checkpoints.

A point maps back exactly: the image point ``((col + (ox + 0.5)/S)·cell, (row + (oy + 0.5)/S)·cell)``
goes through :meth:`pixelrl.vision.image.ImageMap.screen_pixel` to the screen pixel that holds it.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from pixelrl.envs.families import seeds_of
from pixelrl.envs.gui_action import Action, ActionError, normalize_key

DEFAULT_KINDS = ("click", "type", "key")
# Kinds that act at a point of the grid (drag also at its end point).
POINTER_KINDS = ("click", "double_click", "right_click", "move", "drag", "scroll_up", "scroll_down")
KINDS = (*POINTER_KINDS, "type", "key", "wait")
# Wheel notches of a scroll_up / scroll_down (50 CSS px each in MiniWoB++: a text area's length)
SCROLL_NOTCHES = 10
DEFAULT_KEYS = ("enter", "tab", "backspace", "ctrl+a")
_FIELD_TEXT = re.compile(r"^\{field:(\d+)(?::(upper|lower))?\}$")
_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9\"'.,:;!?()]")


def words_of(text: str) -> list[str]:
    """Lower-cased words of ``text``: runs of letters/digits and single symbols (``@``, ``-``);
    spaces, quotes and punctuation separate them."""
    return _WORD.findall(text.lower())


def _bucket(piece: str, buckets: int) -> int:
    return 1 + zlib.crc32(piece.encode()) % (buckets - 1)


def hash_words(text: str, length: int, buckets: int, subwords: int = 0) -> np.ndarray:
    """The first ``length`` word ids of ``text`` (``1 + crc32(word) mod (buckets - 1)``), 0-padded.

    ``subwords`` > 0: (length, 1 + subwords) ids, each word's id followed by the ids of its first
    ``subwords`` character trigrams with boundary marks (``"<lc"``, ``"lc>"`` for "Lc"; fastText's
    subwords), hashed into the same buckets. A word seen for the first time (MiniWoB's labels
    are fresh random strings each episode) then still has a vector built from its letters."""
    words = words_of(text)[:length]
    if subwords <= 0:
        ids = np.zeros(length, dtype=np.int64)
        for i, word in enumerate(words):
            ids[i] = _bucket(word, buckets)
        return ids
    ids = np.zeros((length, 1 + subwords), dtype=np.int64)
    for i, word in enumerate(words):
        ids[i, 0] = _bucket(word, buckets)
        marked = f"<{word}>"
        grams = [marked[j : j + 3] for j in range(len(marked) - 2)][:subwords]
        ids[i, 1 : 1 + len(grams)] = [_bucket("#" + g, buckets) for g in grams]
    return ids


@dataclass
class PointerSpec:
    """What the env wrapper and the policy agree on (both build it from the same config).

    ``image_size`` is (width, height) and a multiple of ``cell``; ``texts`` are the strings a
    ``type`` action may write (the task vocabulary); ``keys`` the keys (``"a+b"``: a hotkey).
    """

    image_size: tuple[int, int] = (160, 120)
    cell: int = 8
    offsets: int = 2
    kinds: tuple[str, ...] = DEFAULT_KINDS
    keys: tuple[str, ...] = DEFAULT_KEYS
    texts: tuple[str, ...] = field(default_factory=tuple)
    max_words: int = 32
    max_text_words: int = 4
    buckets: int = 4096
    subwords: int = 0  # > 0: each word also carries its character trigrams (hash_words)
    reader: bool = False  # + obs["read"]: the screen reader's named-word and text maps (read_maps)

    def __post_init__(self) -> None:
        self.image_size = tuple(int(v) for v in self.image_size)
        self.kinds, self.keys, self.texts = tuple(self.kinds), tuple(self.keys), tuple(self.texts)
        least = {"cell": 1, "offsets": 1, "max_words": 1, "max_text_words": 1, "buckets": 2,
                 "subwords": 0}  # fmt: skip
        for name, low in least.items():  # a negative subwords once meant "off" without a word
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        w, h = self.image_size
        if w % self.cell or h % self.cell:
            raise ValueError(f"image_size {self.image_size} must be a multiple of cell={self.cell}")
        for kind in self.kinds:
            if kind not in KINDS:
                raise ValueError(
                    f"kinds: {kind!r} is not a pointer kind, 'type', 'key' or 'wait' "
                    f"({', '.join(KINDS)})"
                )
        if not isinstance(self.reader, bool):
            raise ValueError(f"reader must be true or false, got {self.reader!r}")
        if self.reader:  # the reader's dependency, named now rather than at the first screen
            from pixelrl.vision.reader import require_reader

            require_reader()
        if "type" in self.kinds and not self.texts:
            raise ValueError("kinds holds 'type' but texts is empty: nothing to type")
        for text in self.texts:
            if not isinstance(text, str):  # YAML reads an unquoted {field:0} as a mapping
                raise ValueError(
                    f'texts: {text!r} is not a string (quote a template: "{{field:0}}")'
                )
            if text.startswith("{") and text.endswith("}") and not _FIELD_TEXT.match(text):
                raise ValueError(
                    f"texts: {text!r} is not a task-field template "
                    "({field:N}, {field:N:upper} or {field:N:lower})"
                )
        for chord in self.keys:
            try:
                [normalize_key(k) for k in chord.split("+")]
            except ActionError as e:
                raise ValueError(f"keys: {chord!r}: {e}") from None

    @property
    def grid(self) -> tuple[int, int]:
        """(columns, rows) of the click heatmap."""
        return self.image_size[0] // self.cell, self.image_size[1] // self.cell

    @property
    def instruction_shape(self) -> tuple[int, ...]:
        """Shape of the hashed instruction: (max_words,), or (max_words, 1 + subwords)."""
        return (self.max_words, 1 + self.subwords) if self.subwords > 0 else (self.max_words,)

    @property
    def num_cells(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def nvec(self) -> list[int]:
        """Sizes of the ``MultiDiscrete`` action: kind, cell, offset, text, key (and with
        ``drag`` among the kinds, the end point's cell and offset)."""
        parts = [
            len(self.kinds),
            self.num_cells,
            self.offsets**2,
            max(1, len(self.texts)),
            max(1, len(self.keys)),
        ]
        return parts + [self.num_cells, self.offsets**2] if "drag" in self.kinds else parts

    def image_point(self, cell: int, offset: int) -> tuple[float, float]:
        """The continuous image point of grid ``cell`` at sub-cell ``offset``."""
        cols, _ = self.grid
        row, col = divmod(int(cell), cols)
        oy, ox = divmod(int(offset), self.offsets)
        return (
            (col + (ox + 0.5) / self.offsets) * self.cell,
            (row + (oy + 0.5) / self.offsets) * self.cell,
        )

    def cell_of(self, image_x: float, image_y: float) -> tuple[int, int]:
        """``(cell, offset)`` holding an image point (the inverse of :meth:`image_point`)."""
        cols, rows = self.grid
        fx, fy = image_x / self.cell, image_y / self.cell
        col, row = min(max(int(fx), 0), cols - 1), min(max(int(fy), 0), rows - 1)
        ox = min(max(int((fx - col) * self.offsets), 0), self.offsets - 1)
        oy = min(max(int((fy - row) * self.offsets), 0), self.offsets - 1)
        return row * cols + col, oy * self.offsets + ox

    @property
    def observation_keys(self) -> tuple[str, ...]:
        """The keys of the observation (what samples, storage and the policy carry)."""
        return ("image", "instruction", "read") if self.reader else ("image", "instruction")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PointerSpec:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown pointer spec keys {unknown}; known: {sorted(known)}")
        return cls(**data)


def field_text(text: str, fields: Sequence[str]) -> str:
    """``text`` itself, or for ``{field:N[:upper|:lower]}`` the N-th of ``fields`` in that case
    (ActionError if there is none)."""
    m = _FIELD_TEXT.match(text)
    if m is None:
        return text
    n, case = int(m.group(1)), m.group(2)
    if n >= len(fields):
        raise ActionError(f"{text}: this episode has {len(fields)} task field(s)")
    return {"upper": str.upper, "lower": str.lower}.get(case, str)(fields[n])


def decode_action(
    sample: Sequence[int], spec: PointerSpec, image_map, fields: Sequence[str] = ()
) -> Action:
    """The :class:`Action` a ``MultiDiscrete`` sample stands for, in screen pixels (``fields``:
    the episode's task field values, for ``{field:N}`` texts)."""
    kind_i, cell, offset, text_i, key_i = (int(v) for v in sample[:5])
    kind = spec.kinds[kind_i]
    if kind == "type":
        return Action.type_text(field_text(spec.texts[text_i], fields))
    if kind == "key":
        keys = spec.keys[key_i].split("+")
        return Action.key(keys[0]) if len(keys) == 1 else Action.hotkey(*keys)
    if kind == "wait":
        return Action.wait()
    x, y = (int(v) for v in image_map.screen_pixel(np.array(spec.image_point(cell, offset))))
    if kind == "drag":
        end = image_map.screen_pixel(np.array(spec.image_point(int(sample[5]), int(sample[6]))))
        return Action.drag(x, y, int(end[0]), int(end[1]))
    if kind in ("scroll_up", "scroll_down"):
        return Action.scroll(x, y, dy=SCROLL_NOTCHES if kind == "scroll_down" else -SCROLL_NOTCHES)
    return Action(kind, x, y)


def encode_action(
    action: Action, spec: PointerSpec, image_map, fields: Sequence[str] = ()
) -> np.ndarray | None:
    """The sample that decodes to the action nearest ``action`` (None if the spec cannot express
    its kind / text / key). Used to score expert actions and recorded demonstrations. A typed
    text in no fixed choice matches the first ``{field:N[:case]}`` choice that types it."""
    kind = spec_kind(action)
    if kind not in spec.kinds:
        return None
    out = np.zeros(len(spec.nvec), dtype=np.int64)
    out[0] = spec.kinds.index(kind)
    if kind == "type":
        texts = [t if _FIELD_TEXT.match(t) is None else None for t in spec.texts]
        if action.text in texts:
            out[3] = texts.index(action.text)
        else:
            for i, t in enumerate(spec.texts):
                match = _FIELD_TEXT.match(t)
                if (
                    match
                    and int(match.group(1)) < len(fields)
                    and field_text(t, fields) == action.text
                ):
                    out[3] = i
                    break
            else:
                return None
    elif kind == "key":
        chord = "+".join(action.keys)
        if chord not in spec.keys:
            return None
        out[4] = spec.keys.index(chord)
    elif kind != "wait":
        ix, iy = image_map.to_image(np.array([action.x + 0.5, action.y + 0.5]))
        out[1], out[2] = spec.cell_of(ix, iy)
        if kind == "drag":
            ix, iy = image_map.to_image(np.array([action.x2 + 0.5, action.y2 + 0.5]))
            out[5], out[6] = spec.cell_of(ix, iy)
    return out


def spec_kind(action: Action) -> str | None:
    """The :class:`PointerSpec` kind that plays ``action`` (a hotkey is a ``key`` chord, a scroll
    its direction), or None for an action no spec kind plays (a sideways or pointer-less scroll,
    done, fail, held keys)."""
    if action.kind == "hotkey":
        return "key"
    if action.kind == "scroll":
        if action.dy == 0 or action.point is None:
            return None
        return "scroll_down" if action.dy > 0 else "scroll_up"
    return action.kind if action.kind in KINDS else None


def pointer_observation(
    screenshot: np.ndarray, instruction: str, spec: PointerSpec, read_maps=None
) -> tuple[dict[str, np.ndarray], Any]:
    """What a pointer policy sees of one screen: ``({"image", "instruction"[, "read"]},
    image_map)``, the image resized to ``spec.image_size`` (``image_map`` takes its points
    back to the screen), the instruction's hashed words and, with ``spec.reader``, the reader's
    maps from ``read_maps`` (a :class:`~pixelrl.gui_agent.read_maps.ReadMaps`, one an episode
    stream). One function for the env wrapper and for agents acting on raw screens."""
    from pixelrl.vision.image import resize

    image, image_map = resize(screenshot, spec.image_size)
    words = hash_words(instruction, spec.max_words, spec.buckets, spec.subwords)
    obs = {"image": image, "instruction": words}
    if spec.reader:
        obs["read"] = read_maps(screenshot, instruction, image_map, spec.image_size)
    return obs, image_map


class PointerEnv(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A GUI env seen through a :class:`PointerSpec` (module doc).

    An action the underlying env refuses (:class:`~pixelrl.envs.gui_action.ActionError`) becomes a ``wait``:
    the step is spent and nothing changes, so a policy is never stopped by its own samples.
    ``last_screenshot`` and ``last_action`` hold the full-size frame and the decoded action (for
    GIFs); ``image_map`` maps the current image back to the screen; ``fields`` holds the
    episode's task field values (``{field:N}`` texts); :meth:`step_action` steps with an
    :class:`~pixelrl.envs.gui_action.Action` directly (experts, demonstrations).
    """

    def __init__(self, env: gym.Env, spec: PointerSpec) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, spec=spec)
        gym.Wrapper.__init__(self, env)
        self.pointer_spec = spec
        w, h = spec.image_size
        self.observation_space = gym.spaces.Dict(
            {
                "image": gym.spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8),
                "instruction": gym.spaces.Box(
                    0, spec.buckets - 1, shape=spec.instruction_shape, dtype=np.int64
                ),
            }
        )
        self.read_maps = None
        if spec.reader:
            from pixelrl.gui_agent.read_maps import ReadMaps

            self.observation_space["read"] = gym.spaces.Box(0, 255, shape=(h, w, 2), dtype=np.uint8)
            self.read_maps = ReadMaps()
        self.action_space = gym.spaces.MultiDiscrete(spec.nvec)
        self.image_map = None
        self.last_screenshot: np.ndarray | None = None
        self.last_action: Action | None = None
        self.fields: list[str] = []

    def observation(self, obs: dict[str, Any]) -> dict[str, np.ndarray]:
        self.last_screenshot = obs["screenshot"]
        seen, self.image_map = pointer_observation(
            obs["screenshot"], obs["instruction"], self.pointer_spec, self.read_maps
        )
        return seen

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.last_action = None
        if self.pointer_spec.reader:
            self.read_maps.forget()
        self.fields = [str(value) for _, value in info.get("fields", ())]
        return self.observation(obs), info

    def step(self, action):
        try:
            act = decode_action(action, self.pointer_spec, self.image_map, self.fields)
        except ActionError:  # a {field:N} the episode does not have
            act = Action.wait()
        return self.step_action(act)

    def step_action(self, act: Action):
        """Step with an :class:`Action` directly (an expert, a demonstration)."""
        try:
            obs, reward, terminated, truncated, info = self.env.step(act)
        except ActionError:
            act = Action.wait()
            obs, reward, terminated, truncated, info = self.env.step(act)
        self.last_action = act
        return self.observation(obs), reward, terminated, truncated, info


class SplitSeeds(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Draws every episode's seed from one split of the env's task family
    (:class:`~pixelrl.envs.families.SeedSplit`; GUI families: ``"train"`` seeds even, ``"eval"``
    seeds odd), so training and held-out evaluation never share a task layout.

    ``reset(seed=s)`` restarts the draw from ``s``; each reset's seed is in ``info["episode_seed"]``.
    """

    def __init__(self, env: gym.Env, split: str) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, split=split)
        gym.Wrapper.__init__(self, env)
        self.split, self.seeds = (
            split,
            seeds_of(env.unwrapped.spec.id if env.unwrapped.spec else ""),
        )
        self.seeds.seed(split, 0)  # an unknown split is a ValueError here, not at reset
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        episode_seed = self.seeds.draw(self.split, self._rng)
        obs, info = self.env.reset(seed=episode_seed, options=options)
        return obs, {**info, "episode_seed": episode_seed}
