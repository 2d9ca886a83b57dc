"""The GUI-agent demo job: train the pixel pointer policy with PPO on a desktop task for a few
minutes, evaluate it on held-out seeds, save the learning curve and a GIF of it acting.

``experts_demo(out_dir)`` runs the scripted expert on every desktop family (success table and a
contact sheet of its clicks); ``pointer_policy_demo(out_dir)`` trains and evaluates the pixel
policy. ``pixelrl demo`` (``make demo``) runs both, then the PointNav demo. Run the policy part
alone: ``python -m pixelrl.gui_agent.demo --out demo_out``.

Outputs of ``pointer_policy_demo`` in ``out_dir``: ``run/`` (the ``gui/ppo`` run folder: checkpoints, history, TensorBoard),
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

from pixelrl.envs.actions import Action


def annotate(frame: np.ndarray, action: Action | None, caption: str = "") -> np.ndarray:
    """A copy of ``frame`` with the action drawn (the recording viewer's markers) and a caption
    band below: the action, then ``caption``."""
    from PIL import Image

    from pixelrl.envs.recording.view import add_caption, draw_gui_action

    image = Image.fromarray(frame).convert("RGB")
    described = draw_gui_action(image, action, "") if action is not None else ""
    # Always two lines, so every frame of a GIF has the same size.
    return np.asarray(add_caption(image, [described, caption[:100]]))


def record_gif(
    agent, env_id: str, path: str | Path, episodes: int = 4, seed: int = 7,
    env_kwargs: dict[str, Any] | None = None, fps: float = 1.5,
) -> Path:  # fmt: skip
    """Play ``episodes`` held-out episodes with ``agent`` and write them as one GIF, each step's
    screenshot with the action taken on it, then the outcome."""
    import gymnasium as gym
    import imageio.v2 as imageio

    import pixelrl.envs  # noqa: F401
    from pixelrl.gui_agent.evaluate import run_episode

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


CONTACT_TILE_WIDTH = 400  # pixels of one screenshot in the experts' contact sheet
CONTACT_STEPS_SHOWN = 4  # zoomed screens per family (the first steps and the last one)


def experts_demo(
    out_dir: str | Path = "outputs/demo", seeds: int = 5, screen_size: tuple[int, int] = (1280, 800)
) -> list[tuple[str, int, int, float]]:
    """The scripted expert on every desktop family: a success table and a contact sheet.

    One row of the sheet per family (its first episode): the whole first screen, then a 2× zoom
    on each screen the expert saw before an action, with that action marked. Returns rows of
    ``(family, successes, episodes, mean steps)``; writes ``desktop_experts.png``.
    """
    from PIL import Image
    from tqdm import tqdm

    from pixelrl.envs.desktop import FAMILIES
    from pixelrl.envs.desktop.env import DesktopEnv
    from pixelrl.envs.gui import bbox_center
    from pixelrl.envs.recording.view import draw_gui_action

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows, strips = [], []
    with tqdm(total=len(FAMILIES) * seeds, desc="expert episodes", unit="ep") as bar:
        for family in FAMILIES:
            env = DesktopEnv(family, screen_size=screen_size)
            wins, lengths = 0, []
            for seed in range(seeds):
                obs, info = env.reset(seed=seed)
                shots, done, steps = [], False, 0
                instruction = obs["instruction"]
                while not done:
                    action = env.expert_action()
                    if seed == 0:
                        shot = Image.fromarray(obs["screenshot"])
                        draw_gui_action(shot, action, "")
                        box = info["target_bbox"]
                        focus = action.point or (bbox_center(box) if box else (0, 0))
                        shots.append((shot, focus, action))
                    obs, _, terminated, truncated, info = env.step(action)
                    done, steps = terminated or truncated, steps + 1
                wins += bool(info["success"])
                lengths.append(steps)
                if seed == 0:
                    strips.append((family, instruction, shots))
                bar.update()
            env.close()
            rows.append((family, wins, seeds, sum(lengths) / len(lengths)))
    sheet = _contact_sheet(strips, screen_size)
    sheet.save(out / "desktop_experts.png")
    return rows


def _contact_sheet(strips, size):
    """One row per family: a caption, the whole first screen, then zooms on each step."""
    from PIL import Image, ImageDraw

    from pixelrl.envs.desktop.render import font

    w, h = size
    tw, th = CONTACT_TILE_WIDTH, round(CONTACT_TILE_WIDTH * h / w)
    caption_h, gap = 22, 6
    cols = 1 + CONTACT_STEPS_SHOWN
    sheet = Image.new(
        "RGB",
        (cols * (tw + gap) + gap, len(strips) * (th + caption_h + gap) + gap),
        (250, 250, 250),
    )
    d = ImageDraw.Draw(sheet)
    f = font(13, bold=True)
    for row, (family, instruction, shots) in enumerate(strips):
        y = gap + row * (th + caption_h + gap)
        d.text((gap, y + 3), f"{family}: {instruction}"[:200], fill=(20, 20, 20), font=f)
        if len(shots) > CONTACT_STEPS_SHOWN:
            shots = shots[: CONTACT_STEPS_SHOWN - 1] + shots[-1:]
        tiles = [(shots[0][0], "")] + [
            (_zoom(img, focus), _describe(action)) for img, focus, action in shots
        ]
        for col, (tile, label) in enumerate(tiles):
            x = gap + col * (tw + gap)
            sheet.paste(tile.resize((tw, th), Image.Resampling.LANCZOS), (x, y + caption_h))
            if col:
                d.text(
                    (x + 4, y + caption_h + th - 18),
                    f"step {col} (2x): {label}"[:60],
                    fill=(255, 255, 255),
                    font=f,
                    stroke_width=2,
                    stroke_fill=(0, 0, 0),
                )
    return sheet


def _describe(action: Action) -> str:
    if action.kind == "type":
        return f"type {action.text!r}"
    if action.kind in ("key", "hotkey"):
        return f"{action.kind} {'+'.join(action.keys)}"
    return action.kind


def _zoom(img, focus):
    """The half-size region of ``img`` around ``focus`` (inside the screen)."""
    zw, zh = img.width // 2, img.height // 2
    x0 = min(max(focus[0] - zw // 2, 0), img.width - zw)
    y0 = min(max(focus[1] - zh // 2, 0), img.height - zh)
    return img.crop((x0, y0, x0 + zw, y0 + zh))


def pointer_policy_demo(
    out_dir: str | Path = "demo_out",
    env_id: str = "pixelrl/Desktop-ClickButton-v0",
    total_frames: int = 12_000,
    eval_episodes: int = 100,
    overrides: Sequence[str] = (),
) -> dict[str, Any]:
    """Train ``gui/ppo`` (progress bar), evaluate, write the curve, the GIF and the table."""
    from pixelrl.gui_agent.agents import PointerAgent
    from pixelrl.gui_agent.evaluate import evaluate_success, format_table
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
    pointer_policy_demo(args.out, args.env, args.frames, args.episodes, args.overrides)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
