"""The GUI-agent demo jobs: the scripted experts on every desktop family, and the pixel pointer
policy learning a desktop task from the expert (behaviour cloning) in about a minute.

``experts_demo(out_dir)`` runs the scripted expert on every desktop family (success table and a
contact sheet of its clicks); ``pointer_bc_demo(out_dir)`` clones the expert into the pixel
policy, plotting held-out success as it learns, then evaluates it and records a GIF.
``pixelrl demo`` (``make demo``) runs both, then the PointNav demo. Run the policy part alone:
``python -m pixelrl.gui_agent.demo --out demo_out``.

Outputs of ``pointer_bc_demo`` in ``out_dir``: ``learning_curve.png`` (held-out success against
behaviour-cloning steps, and the loss), ``curve.csv``, ``policy.pt`` (the cloned weights, a
``policy.init`` for ``pixelrl train gui/ppo``), ``agent.gif`` (clicks marked with a red ring,
typed text and keys in a caption, 1.5 frames a second), ``success.txt`` (the table).

There is no PPO in this part. On the pointer policy, PPO after behaviour cloning has not moved
held-out success beyond noise (200 seeds each, ``docs/results/desktop_ppo.md``: click-button 98.5% ->
98.5%, check-boxes 98.0% -> 98.0% and 99.5% -> 99.0%, type-in-field 100% -> 100%); this demo's
earlier 6,000 PPO frames after behaviour cloning drew a flat curve (0.52 -> 0.54), most of the
part's time. The recipe that does both, ~10 minutes on two cores:
``gui_agent/configs/ppo_bc.yaml``. The PointNav part is the one that shows PPO learning.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.envs.gui_action import Action


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
    from PIL import Image

    from pixelrl.envs.families import seeds_of
    from pixelrl.gui_agent.evaluate import run_episode

    env, held_out = gym.make(env_id, **(env_kwargs or {})), seeds_of(env_id)
    frames: list[np.ndarray] = []
    for k in range(episodes):
        after: list[np.ndarray] = []

        def on_step(obs, action, reward, info, next_obs, k=k, after=after):
            # the step number keeps repeated actions on separate frames (GIF writers merge
            # identical ones)
            caption = f"ep {k + 1} step {len(after) + 1}: {obs['instruction']}"
            frames.append(annotate(obs["screenshot"], action, caption))
            after.append(next_obs["screenshot"])

        result = run_episode(env, agent, held_out.seed("eval", seed + k), on_step)
        outcome = "success" if result["success"] else "failed"
        frames.append(annotate(after[-1], None, f"ep {k + 1}: {outcome}"))
    env.close()
    path = Path(path)
    # PIL's ``duration`` is milliseconds per frame (GIF stores hundredths of a second).
    # imageio.v2's mimsave, used before, reads milliseconds too in the installed 2.38 (older
    # versions took seconds): its 1/fps wrote delays of 0, played as fast as a viewer can.
    images = [Image.fromarray(f) for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=round(1000 / fps),
                   loop=0, optimize=False)  # fmt: skip
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

    from pixelrl.envs import task_family
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
            expert = task_family("desktop").expert_for(env)
            wins, lengths = 0, []
            for seed in range(seeds):
                obs, info = env.reset(seed=seed)
                expert.reset()
                shots, done, steps = [], False, 0
                instruction = obs["instruction"]
                while not done:
                    action = expert.act()
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


def pointer_bc_demo(
    out_dir: str | Path = "demo_out",
    env_id: str = "pixelrl/Desktop-ClickButton-v0",
    samples: int = 3000,
    steps: int = 600,
    every: int = 100,
    curve_episodes: int = 40,
    eval_episodes: int = 100,
    overrides: Sequence[str] = (),
    batch_size: int = 16,
) -> dict[str, Any]:
    """Behaviour cloning of the scripted expert into the pixel pointer policy, with a learning
    curve: held-out success before cloning and every ``every`` of its ``steps``.

    The ``gui/ppo`` recipe's policy and spec (``overrides`` are its config keys): ``samples``
    expert steps on training seeds (even), then :func:`~pixelrl.gui_agent.pointer_bc.behaviour_clone`
    (Adam, cosine learning rate); each point of the curve plays the same ``curve_episodes``
    held-out (odd) seeds greedily. The final table plays ``eval_episodes`` other held-out seeds.
    ``batch_size`` replaces the recipe's 32 (``policy.bc_batch_size``): half the cost per step
    for a few points less at 600 steps (0.48 [0.38, 0.58] against 0.56 [0.46, 0.65] on the 100
    held-out seeds, 176 against ~290 CPU s for the part, on a shared 2-core machine).

    No PPO here (module doc); ``pixelrl train gui/ppo policy.init=OUT/policy.pt
    policy.bc_steps=0`` continues from the cloned weights with PPO. Writes ``learning_curve.png``,
    ``curve.csv``, ``policy.pt``, ``success.txt`` and ``agent.gif`` into ``out_dir``.
    """
    import torch
    from tqdm import tqdm

    from pixelrl.gui_agent import ppo_task
    from pixelrl.gui_agent.agents import PointerAgent
    from pixelrl.gui_agent.evaluate import evaluate_success, format_table
    from pixelrl.gui_agent.pointer_bc import behaviour_clone, expert_samples
    from pixelrl.train import config_for

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config_for("gui/ppo", [f"env.id={env_id}", *overrides])
    if cfg.torch_threads:  # the recipe's 1: the demo trains PointNav on the other core meanwhile
        torch.set_num_threads(int(cfg.torch_threads))
    torch.manual_seed(int(cfg.seed))
    spec = ppo_task.pointer_spec(cfg)
    env = ppo_task.make_env(env_id, spec, "train", **ppo_task.env_kwargs(cfg, "train"))
    policy = ppo_task.make_policy(cfg, env.observation_space, env.action_space, warm_start=False)
    data = expert_samples(env, samples, int(cfg.seed), progress=True)
    env.close()

    eval_kwargs = ppo_task.env_kwargs(cfg, "eval")
    curve: list[tuple[int, float]] = []

    def held_out(step: int, policy, losses: Sequence[float] = ()) -> None:
        rows = evaluate_success(
            PointerAgent(policy), env_id, curve_episodes, seed=1, env_kwargs=eval_kwargs,
            progress=False,
        )  # fmt: skip
        curve.append((step, rows[-1]["success"]))
        loss = f", loss {np.mean(losses[-every:]):.3f}" if len(losses) else ""
        tqdm.write(f"BC step {step:>5}: held-out success {rows[-1]['success']:.2f}{loss}")

    held_out(0, policy)
    losses = behaviour_clone(
        policy, data, steps, seed=int(cfg.seed), progress=True,
        **{**ppo_task.bc_options(cfg), "batch_size": batch_size}, callback=held_out, every=every,
    )  # fmt: skip
    if curve[-1][0] != steps:
        held_out(steps, policy, losses)
    # as ppo_task's warm start leaves it: behaviour cloning trains no value head, PPO's critic
    # starts at 0
    torch.nn.init.zeros_(policy.value_head.weight)
    torch.nn.init.zeros_(policy.value_head.bias)
    torch.save(policy.state_dict(), out / "policy.pt")

    agent = PointerAgent(policy)
    rows = evaluate_success(agent, env_id, eval_episodes, seed=0, env_kwargs=eval_kwargs)
    title = (
        f"{env_id}: pointer policy after {steps} behaviour-cloning steps of {batch_size}, "
        "held-out seeds"
    )
    table = format_table(rows, "success", title)
    (out / "success.txt").write_text(table + "\n")
    with open(out / "curve.csv", "w") as f:
        f.write("bc_step,held_out_success\n")
        f.writelines(f"{step},{success:.4f}\n" for step, success in curve)
    plot = plot_bc_curve(
        curve, losses, out / "learning_curve.png", env_id, curve_episodes, samples, batch_size
    )
    gif = record_gif(agent, env_id, out / "agent.gif", env_kwargs=eval_kwargs)
    print(table)
    print(f"curve: {plot}\nGIF:   {gif}")
    return {"curve": plot, "gif": gif, "success": rows, "points": curve, "losses": losses}


def plot_bc_curve(
    points: Sequence[tuple[int, float]], losses: Sequence[float], path: str | Path,
    env_id: str, episodes: int, samples: int, batch_size: int = 16,
) -> Path:  # fmt: skip
    """Held-out success against behaviour-cloning steps, with the training loss on a second
    axis; labelled axes, a title and a legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    steps, success = zip(*points)
    lines = ax.plot(steps, success, "o-", color="tab:blue",
                    label=f"held-out success ({episodes} episodes, greedy)")  # fmt: skip
    lines += [ax.axhline(1.0, ls="--", color="0.5", label="scripted expert")]
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlabel(f"behaviour-cloning steps (batches of {batch_size} expert steps)")
    ax.set_ylabel("held-out success")
    if losses:
        twin = ax.twinx()
        window = max(1, len(losses) // 30)
        smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
        lines += twin.plot(np.arange(len(smooth)) + window, smooth, color="tab:orange",
                           alpha=0.7, label="training loss (right axis)")  # fmt: skip
        twin.set_ylabel("behaviour-cloning loss")
    fig.legend(handles=lines, loc="lower center", ncol=3, fontsize=8)
    name = env_id.split("/")[-1]
    ax.set_title(f"Pixel pointer policy on {name}: behaviour cloning of the scripted expert\n"
                 f"({samples:,} expert steps on training seeds; no PPO)", fontsize=10)  # fmt: skip
    ax.grid(alpha=0.3)
    fig.tight_layout(rect=(0, 0.07, 1, 1))  # room for the legend below
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="demo_out")
    p.add_argument("--env", default="pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--samples", type=int, default=3000, help="expert steps to clone")
    p.add_argument("--steps", type=int, default=600, help="behaviour-cloning steps")
    p.add_argument("--episodes", type=int, default=100, help="held-out episodes of the table")
    p.add_argument("overrides", nargs="*", help="gui/ppo config overrides (the policy's)")
    args = p.parse_args(argv)
    pointer_bc_demo(args.out, args.env, args.samples, args.steps, eval_episodes=args.episodes,
                    overrides=args.overrides)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
