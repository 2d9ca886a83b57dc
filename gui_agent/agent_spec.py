"""What a GUI vision-language agent needs beside its weights to act as it was trained: how its
answers are written (``action_format``, ``coordinates``, ``mark_actions``) and what its prompt
showed (``screen_parse``, ``screen_words``), saved as ``pixelrl_gui_agent.json`` in the model
folder by the ``gui/*`` text recipes (:func:`save_gui_agent`) and read by
:func:`pixelrl.gui_agent.agents.load_agent` (``pixelrl eval``, ``bench/miniwob_table.py``).

Without it a model trained to answer in pyautogui syntax, or with a Set-of-Mark parse in its
prompt, was evaluated as a UI-TARS model without one: its answers refused, its accuracy wrong.
The navigation agent's ``pixelrl_nav_agent.json`` (:mod:`pixelrl.embodied.vlm_agent`) is the
same idea. The file is data from whoever shared the folder: every field is checked
(:meth:`GUIAgentSpec.from_json`), nothing in it is run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

GUI_AGENT_FILE = "pixelrl_gui_agent.json"
MAX_SPEC_BYTES = 64_000
MAX_SCREEN_WORDS = 1000


class GUIAgentFileError(ValueError):
    """A ``pixelrl_gui_agent.json`` that is not one (one line)."""


@dataclass(frozen=True)
class GUIAgentSpec:
    action_format: str = "uitars"
    coordinates: str | None = None  # the space's name; None: the codec's default
    mark_actions: bool = False
    screen_parse: bool = False
    screen_words: int = 40

    @classmethod
    def from_policy(cls, policy, screen_words: int) -> GUIAgentSpec:
        codec = policy.codec
        space = codec.coordinates.name if codec.coordinates is not None else None
        return cls(codec.action_format, space, bool(codec.mark_actions),
                   policy.screen_parse is not None, int(screen_words))  # fmt: skip

    @classmethod
    def from_json(cls, data: Any, where: str = GUI_AGENT_FILE) -> GUIAgentSpec:
        """The spec of a parsed json object; a wrong or unknown field is a
        :class:`GUIAgentFileError` naming it."""
        from pixelrl.envs.gui_action.codec import ACTION_FORMATS, GUIActionCodec

        if not isinstance(data, dict):
            raise GUIAgentFileError(f"{where}: not a json object")
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise GUIAgentFileError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")
        spec = cls(**data)
        if spec.action_format not in ACTION_FORMATS:
            raise GUIAgentFileError(
                f"{where}: action_format {spec.action_format!r}; known: {', '.join(ACTION_FORMATS)}"
            )
        if spec.coordinates is not None and not isinstance(spec.coordinates, str):
            raise GUIAgentFileError(f"{where}: coordinates must be a name or null")
        for key in ("mark_actions", "screen_parse"):
            if not isinstance(getattr(spec, key), bool):
                raise GUIAgentFileError(f"{where}: {key} must be true or false")
        words = spec.screen_words
        if (
            isinstance(words, bool)
            or not isinstance(words, int)
            or not 1 <= words <= MAX_SCREEN_WORDS
        ):
            raise GUIAgentFileError(f"{where}: screen_words must be 1..{MAX_SCREEN_WORDS}")
        if spec.mark_actions and not spec.screen_parse:
            raise GUIAgentFileError(f"{where}: mark_actions needs screen_parse")
        try:  # the codec's own checks (a coordinate space's name, toolcall's limits)
            GUIActionCodec(spec.action_format, spec.coordinates, spec.mark_actions)
        except ValueError as e:
            raise GUIAgentFileError(f"{where}: {e}") from None
        return spec

    def codec(self):
        """The action codec the agent was trained with (toolcall: with its tools' schemas)."""
        from pixelrl.envs.gui_action.codec import GUIActionCodec

        return GUIActionCodec(self.action_format, self.coordinates, self.mark_actions,
                              tools_for(self.action_format))  # fmt: skip

    def screen_parse_for(self, codec):
        """The prompt's Set-of-Mark screen parse (None when it had none)."""
        if not self.screen_parse:
            return None
        from pixelrl.vision.reader import SetOfMarks

        return SetOfMarks(codec.point_text, max_words=self.screen_words)


def tools_for(action_format: str) -> list[dict] | tuple:
    """The tools a GUI answer format calls: TRL's GUI environment's schemas for ``toolcall``
    (shown in the prompt's system turn), none for the text dialects."""
    if action_format != "toolcall":
        return ()
    from pixelrl.trl_env import gui_tool_schemas

    return gui_tool_schemas()


def save_gui_agent(policy, folder: str | Path, screen_words: int = 40) -> Path:
    """The policy's model folder (:meth:`~pixelrl.vision.vlm.VLMPolicy.save`) plus its spec."""
    folder = Path(policy.save(folder) or folder)
    spec = GUIAgentSpec.from_policy(policy, screen_words)
    (folder / GUI_AGENT_FILE).write_text(json.dumps(asdict(spec), indent=2) + "\n")
    return folder


def read_gui_spec(folder: str | Path) -> GUIAgentSpec | None:
    """The spec saved in a model folder; None for a folder without one (saved before, or not
    by a ``gui/*`` recipe). A file that is not a spec is a :class:`GUIAgentFileError`."""
    path = Path(folder) / GUI_AGENT_FILE
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_SPEC_BYTES:
        raise GUIAgentFileError(f"{path}: {path.stat().st_size} bytes (at most {MAX_SPEC_BYTES})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GUIAgentFileError(f"{path}: not json ({e})") from None
    return GUIAgentSpec.from_json(data, str(path))
