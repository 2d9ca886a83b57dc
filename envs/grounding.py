"""Grounding samples from GUI screens: (screenshot, instruction, target bbox), written as episodes.

Any pixelrl GUI env whose ``info["a11y"]`` lists elements with pixel bboxes (MiniWoB++ from the
page's DOM, the X11 desktop from its windows) yields grounding samples: for each element with a
name that is unique on its screen, an instruction that refers to it (``Click the "OK"
button.``) and its bbox. :func:`export_grounding` writes each sample as a one-step episode in
the recorded-episode format (``pixelrl.envs.recording``): the screenshot and instruction as the
observation, a click at the bbox centre as the action (pyautogui text), ``target_bbox`` and
``success=True`` — so the grounding loaders and the click-in-box rewards read them like any
other episode. The samples are not replayable in the env (the instruction is ours, not the
task's): ``meta/info.json`` has ``env_id: null`` and names the source env in ``extra``.

Run: ``python -m pixelrl.envs.grounding pixelrl/MiniWoB-click-button-v0 out/ --seeds 20``.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pixelrl.envs.gui import bbox_center
from pixelrl.envs.gui_action import TEXT_CHARSET, Action, to_pyautogui

# Roles worth pointing at, and how an instruction names each.
TEMPLATES: dict[str, str] = {
    "button": 'Click the "{name}" button.',
    "link": 'Click the link "{name}".',
    "text": 'Click on the text "{name}".',
    "label": 'Click the label "{name}".',
    "option": 'Click the option "{name}".',
    "window": 'Click the "{name}" window.',
    "checkbox": 'Click the "{name}" checkbox.',
    "radio": 'Click the "{name}" radio button.',
    "textbox": 'Click the "{name}" field.',
}
MAX_NAME_LENGTH = 60


@dataclass(frozen=True)
class GroundingSample:
    """One target on one screen: ``instruction`` refers to the element at ``bbox`` [x0,y0,x1,y1)."""

    instruction: str
    bbox: tuple[int, int, int, int]
    role: str
    name: str


def grounding_samples(
    a11y: list[dict[str, Any]],
    screen_size: tuple[int, int],
    roles: tuple[str, ...] = tuple(TEMPLATES),
    min_size: int = 4,
) -> list[GroundingSample]:
    """The unambiguous targets of one screen, in a11y order.

    Kept: elements of ``roles`` with a printable name of at most 60 characters that no other
    kept-role element on the screen shares (a repeated name would make the instruction
    ambiguous), and a bbox on the screen at least ``min_size`` pixels a side.
    """
    width, height = screen_size
    candidates = []
    for e in a11y:
        name = " ".join(str(e.get("name", "")).split())
        if e.get("role") not in roles or not name or len(name) > MAX_NAME_LENGTH:
            continue
        if any(c not in TEXT_CHARSET or c == '"' for c in name):
            continue
        x0, y0, x1, y1 = (int(v) for v in e["bbox"])
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
        if x1 - x0 < min_size or y1 - y0 < min_size:
            continue
        candidates.append((e["role"], name, (x0, y0, x1, y1)))
    counts = Counter(name.lower() for _, name, _ in candidates)
    return [
        GroundingSample(TEMPLATES[role].format(name=name), bbox, role, name)
        for role, name, bbox in candidates
        if counts[name.lower()] == 1
    ]


def export_grounding(
    env_id: str,
    root: str | os.PathLike,
    seeds: list[int] | range,
    env_kwargs: dict[str, Any] | None = None,
    max_per_screen: int = 16,
    roles: tuple[str, ...] = tuple(TEMPLATES),
    progress: bool = True,
) -> dict[str, int]:
    """Reset ``env_id`` once per seed and write every screen's samples to the dataset ``root``.

    Returns counts: ``screens``, ``samples``. The dataset is new (an existing one is an error).
    """
    import gymnasium
    from tqdm import tqdm

    from pixelrl.envs.recording.wrapper import dataset_info_for
    from pixelrl.envs.recording.writer import DatasetWriter

    env = gymnasium.make(env_id, **(env_kwargs or {}))
    if not hasattr(env.unwrapped, "screen_size"):
        env.close()
        raise ValueError(f"{env_id} is not a GUI env (no screen); grounding needs one")
    counts = {"screens": 0, "samples": 0}
    writer = None
    try:
        info = dataset_info_for(
            env,
            extra={
                "kind": "grounding",
                "source_env": env_id,
                "source_kwargs": dict(env_kwargs or {}),
            },
        )
        info.env_id, info.env_kwargs = None, {}  # samples, not replayable episodes
        writer = DatasetWriter(root, info)
        screen = env.unwrapped.screen_size
        for seed in tqdm(list(seeds), desc=f"grounding {env_id}", disable=not progress):
            obs, reset_info = env.reset(seed=int(seed))
            counts["screens"] += 1
            for sample in grounding_samples(reset_info["a11y"], screen, roles)[:max_per_screen]:
                observation = {"screenshot": obs["screenshot"], "instruction": sample.instruction}
                facts = {"target_bbox": list(sample.bbox)}
                episode = writer.begin_episode(observation, int(seed), None, facts)
                click = Action.click(*bbox_center(sample.bbox))
                step_info = {
                    **facts,
                    "success": True,
                    "role": sample.role,
                    "name": sample.name,
                    "source_env": env_id,
                }
                episode.add_step(to_pyautogui(click), 1.0, True, False, step_info, observation)
                episode.finish()
                counts["samples"] += 1
    finally:
        if writer is not None:
            writer.close()
        env.close()
    return counts


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def main(argv: list[str] | None = None) -> None:
    """The command line; a mistake (unknown env id, bad count, an env option or dataset folder
    it refuses) is one ``error:`` line and exit status 2, like ``pixelrl``'s verbs."""
    parser = argparse.ArgumentParser(
        prog="python -m pixelrl.envs.grounding", description=__doc__.splitlines()[0]
    )
    parser.add_argument("env_id", help="a pixelrl GUI env id, e.g. pixelrl/MiniWoB-click-button-v0")
    parser.add_argument("root", help="a new dataset folder")
    parser.add_argument("--seeds", type=_count, default=10, help="screens to export (seeds 0..N-1)")
    parser.add_argument("--max-per-screen", type=_count, default=16)
    args = parser.parse_args(argv)
    import pixelrl.envs  # noqa: F401  (registers the ids)
    from pixelrl.envs.registry import unknown_env_message

    problem = unknown_env_message(args.env_id)
    if problem:
        parser.error(problem)
    try:
        counts = export_grounding(
            args.env_id, args.root, range(args.seeds), max_per_screen=args.max_per_screen
        )
    except ValueError as e:  # DatasetError (a folder that holds data), not a GUI env
        parser.error(str(e))
    print(f"{'env':<40} {'screens':>8} {'samples':>8}")
    print(f"{args.env_id:<40} {counts['screens']:>8} {counts['samples']:>8}")


if __name__ == "__main__":
    main()
