"""The Gymnasium side: the ``Dict`` action space a PPO policy samples, and any form of action
(an :class:`Action`, a space sample, action text) as an :class:`Action`."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from pixelrl.envs.gui_action.action import (
    DEFAULT_MAX_TEXT_LENGTH,
    KINDS,
    SAMPLE_TEXT_LENGTH,
    TEXT_CHARSET,
    Action,
)
from pixelrl.envs.gui_action.coordinates import CoordinateSpace
from pixelrl.envs.gui_action.errors import ActionError
from pixelrl.envs.gui_action.keys import _KEY_INDEX, KEY_NAMES
from pixelrl.envs.gui_action.parse import parse_action


class GuiActionSpace(spaces.Dict):
    """:func:`action_space`'s ``Dict``, less the kinds and keys a backend cannot do.

    Gymnasium's contract is that every element of an env's space is a valid action, so a refused
    kind or key is neither sampled nor contained.
    """

    def __init__(
        self,
        subspaces: dict[str, spaces.Space],
        refused_kinds: tuple[str, ...] = (),
        refused_keys: tuple[str, ...] = (),
    ):
        super().__init__(subspaces)
        self.refused_kinds = tuple(refused_kinds)
        self.refused_keys = tuple(refused_keys)

    def sample(self, mask=None, probability=None) -> dict:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        if not (self.refused_kinds or self.refused_keys):
            return super().sample()
        kinds = np.array([k not in self.refused_kinds for k in KINDS], dtype=np.int8)
        keys = np.array([k not in self.refused_keys for k in KEY_NAMES], dtype=np.int8)
        masks: dict = {name: None for name in self.spaces}
        # MultiBinary's mask: 0 forces a 0, 2 draws the bit
        masks.update(kind=kinds, key=keys, hotkey=np.where(keys == 1, 2, 0).astype(np.int8))
        return super().sample(mask=masks)

    def contains(self, x) -> bool:
        if not super().contains(x):
            return False
        if KINDS[int(x["kind"])] in self.refused_kinds:
            return False
        refused = [_KEY_INDEX[k] for k in self.refused_keys]
        return int(x["key"]) not in refused and not np.asarray(x["hotkey"])[refused].any()

    def __eq__(self, other) -> bool:
        return (
            super().__eq__(other)
            and getattr(other, "refused_kinds", ()) == self.refused_kinds
            and getattr(other, "refused_keys", ()) == self.refused_keys
        )


def action_space(
    screen_size: tuple[int, int],
    refused_kinds: tuple[str, ...] = (),
    refused_keys: tuple[str, ...] = (),
) -> GuiActionSpace:
    """The Gymnasium ``Dict`` action space of a W×H GUI env.

    ``kind`` indexes :data:`KINDS`; ``point``/``point2`` are pixel (x, y); ``scroll`` is
    (dx, dy) notches; ``key`` indexes :data:`KEY_NAMES`; ``hotkey`` marks the keys of a chord.
    ``refused_kinds``/``refused_keys``: what the backend cannot do (see :class:`GuiActionSpace`).
    """
    width, height = screen_size
    high = np.array([width - 1, height - 1], dtype=np.int32)
    return GuiActionSpace(
        {
            "kind": spaces.Discrete(len(KINDS)),
            "point": spaces.Box(low=0, high=high, shape=(2,), dtype=np.int32),
            "point2": spaces.Box(low=0, high=high, shape=(2,), dtype=np.int32),
            "scroll": spaces.Box(low=-10, high=10, shape=(2,), dtype=np.int32),
            "text": spaces.Text(max_length=SAMPLE_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET),
            "key": spaces.Discrete(len(KEY_NAMES)),
            "hotkey": spaces.MultiBinary(len(KEY_NAMES)),
        },
        refused_kinds,
        refused_keys,
    )


def as_action(
    action: Action | dict | str,
    screen_size: tuple[int, int],
    coordinates: str | CoordinateSpace | None = None,
    max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
) -> Action:
    """What a GUI env's ``step`` accepts, as a validated :class:`Action`.

    An :class:`Action`, an element of :func:`action_space` (a dict) or action text (pyautogui or
    UI-TARS syntax, read in ``coordinates``: by default pixels for pyautogui, 0-1000 for UI-TARS).
    """
    if isinstance(action, Action):
        return action.validate(screen_size, max_text_length)
    if isinstance(action, dict):
        return Action.from_sample(action).validate(screen_size, max_text_length)
    if isinstance(action, str):
        return parse_action(action, screen_size, coordinates, max_text_length)
    raise ActionError(
        f"a GUI action is an Action, an action-space dict or action text, got {type(action).__name__}"
    )


def sample_action(space: spaces.Space, tries: int = 100) -> Any:
    """A sample of ``space`` that is a valid action: a GUI sample as an :class:`Action` (a
    sample can be a scroll of zero notches, which no Action is: drawn again)."""
    for _ in range(tries):
        sample = space.sample()
        if not isinstance(sample, dict):
            return sample
        try:
            return Action.from_sample(sample)
        except ActionError:
            continue
    raise RuntimeError(f"no valid action in {tries} samples of {space}")
