"""The GUI-agent demo job: train the pixel pointer policy with PPO on a desktop task for a few
minutes, evaluate it on held-out seeds, save the learning curve and a GIF of it acting.

``run_demo(out_dir)`` returns the paths and the success table; the lead wires it into
``make demo`` / ``pixelrl demo``. Run alone: ``python -m gui_agent.demo --out demo_out``.

Outputs in ``out_dir``: ``run/`` (the ``gui/ppo`` run folder: checkpoints, history, TensorBoard),
``learning_curve.png``, ``agent.gif`` (clicks marked with a red ring, typed text and keys in a
caption), ``success.txt`` (the table).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from envs.actions import Action


def annotate(frame: np.ndarray, action: Action | None, caption: str = "") -> np.ndarray:
    """A copy of ``frame`` with the action drawn: a ring at a pointer action's point, the action
    (and ``caption``) written in a strip along the bottom."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame).convert("RGB")
    draw = ImageDraw.Draw(image)
    text = caption
    if action is not None:
        if action.point is not None:
            x, y = action.point
            for r, width in ((9, 3), (3, 2)):
                draw.ellipse([x - r, y - r, x + r, y + r], outline=(230, 30, 30), width=width)
        detail = {
            "type": repr(action.text),
            "key": "+".join(action.keys),
            "hotkey": "+".join(action.keys),
        }
        text = f"{action.kind} {detail.get(action.kind, action.point or '')}  {caption}".strip()
    h = 14
    draw.rectangle([0, image.height - h, image.width, image.height], fill=(0, 0, 0))
    draw.text((3, image.height - h + 1), text[:100], fill=(255, 255, 255))
    return np.asarray(image)


def record_gif(
    agent, env_id: str, path: str | Path, episodes: int = 4, seed: int = 7,
    env_kwargs: dict[str, Any] | None = None, fps: float = 1.5,
) -> Path:  # fmt: skip
    """Play ``episodes`` held-out episodes with ``agent`` and write them as one GIF, each step's
    screenshot with the action taken on it, then the outcome."""
    import gymnasium as gym
    import imageio.v2 as imageio

    import envs  # noqa: F401
    from gui_agent.evaluate import run_episode

    env = gym.make(env_id, **(env_kwargs or {}))
    frames: list[np.ndarray] = []
    for k in range(episodes):
        last: list[np.ndarray] = []

        def on_step(obs, action, reward, info, next_obs, k=k, last=last):
            frames.append(annotate(obs["screenshot"], action, f"ep {k + 1}: {obs['instruction']}"))
            last[:] = [next_obs["screenshot"]]

        result = run_episode(env, agent, 2 * (seed + k) + 1, on_step)
        outcome = "success" if result["success"] else "failed"
        frames.append(annotate(last[0], None, f"ep {k + 1}: {outcome}"))
    env.close()
    path = Path(path)
    imageio.mimsave(path, frames, duration=1.0 / fps, loop=0)
    return path


def run_demo(
    out_dir: str | Path = "demo_out",
    env_id: str = "pixelrl/Desktop-ClickButton-v0",
    total_frames: int = 12_000,
    eval_episodes: int = 100,
    overrides: Sequence[str] = (),
) -> dict[str, Any]:
    """Train ``gui/ppo`` (progress bar), evaluate, write the curve, the GIF and the table."""
    from gui_agent.agents import PointerAgent
    from gui_agent.evaluate import evaluate_success, format_table
    from pixelrl.train import Trainer, config_for

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config_for(
        "gui/ppo",
        [f"env.id={env_id}", f"train.total_frames={total_frames}",
         f"train.output_dir={out / 'run'}", "train.eval_interval=0", "train.eval_episodes=20",
         *overrides],
    )  # fmt: skip
    result = Trainer(cfg).run()
    curve = out / "learning_curve.png"
    shutil.copyfile(Path(result["run_dir"]) / "learning_curve.png", curve)
    agent = PointerAgent.from_checkpoint(Path(result["run_dir"]))
    kwargs = {"screen_size": tuple(agent.screen_size or (320, 240))}
    rows = evaluate_success(agent, env_id, eval_episodes, seed=0, env_kwargs=kwargs)
    table = format_table(rows, "success", f"{env_id}: trained pointer policy, held-out seeds")
    (out / "success.txt").write_text(table + "\n")
    gif = record_gif(agent, env_id, out / "agent.gif", env_kwargs=kwargs)
    print(table)
    print(f"curve: {curve}\nGIF:   {gif}")
    return {"run_dir": result["run_dir"], "curve": curve, "gif": gif, "success": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="demo_out")
    p.add_argument("--env", default="pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--frames", type=int, default=12_000)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("overrides", nargs="*", help="gui/ppo config overrides")
    args = p.parse_args(argv)
    run_demo(args.out, args.env, args.frames, args.episodes, args.overrides)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
