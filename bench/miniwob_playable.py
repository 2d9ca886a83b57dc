"""Which MiniWoB++ tasks the pixel pointer policy can clone from the oracle (issue 54: the widest set).

    python bench/miniwob_playable.py                              # every oracle task, 3 episodes
    python bench/miniwob_playable.py --tasks terminal drag-box --episodes 2
    python bench/miniwob_playable.py --config gui_agent/configs/miniwob_wide.yaml \
        'policy.kinds=[click,type,wait]' --json playable.json    # another spec (dotted overrides)

Why it exists: ``gui/miniwob`` clones the MiniWoB++ oracle (:mod:`pixelrl.envs.web.oracle`) into
the pointer policy, whose action spec (``policy.kinds``, ``policy.texts`` templates such as
``"{field:0}"``, ``policy.keys``) cannot express every oracle step: a typed answer the oracle
computed (no task field types it), a key or a kind the spec lacks. Cloning refuses a missing
kind but silently skips a text or key it cannot encode
(:func:`pixelrl.gui_agent.pointer_bc.expert_samples`), which trains a policy that cannot finish
the task. Issue 54 asks for the widest task set the recipe can train; this probe says which.

Each task's oracle plays ``--episodes`` training (even) seeds through
:class:`~pixelrl.gui_agent.pointer_env.PointerEnv` with the config's pointer spec, one headless
Chromium at a time, the loop of ``expert_samples``: every oracle action goes through
:func:`~pixelrl.gui_agent.pointer_env.encode_action`; one it cannot encode that is not a
skippable kind (:data:`~pixelrl.gui_agent.pointer_bc.SKIPPABLE_KINDS`) makes the task unplayable,
with the action and why. ``--decoded`` plays the policy's decoding of each encoded step instead
of the oracle's own action (the grid point, a scroll's fixed notches), to see that the clone's
targets still solve the task. The screen reader is off (it changes the observation only) unless
``--reader``. The table ends with the count, and how many playable tasks have published human
figures (``bench/miniwob_table.py`` ``TABLE``) with their human mean.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_CONFIG = "gui_agent/configs/miniwob_widest.yaml"


def describe(action: Any) -> str:
    """A short text of an :class:`~pixelrl.envs.gui_action.Action`: ``type('42')``, ``key(pagedown)``,
    ``drag(10,20->30,40)``."""
    kind = action.kind
    if kind == "type":
        return f"type({action.text!r})"
    if kind in ("key", "hotkey"):
        return f"{kind}({'+'.join(action.keys)})"
    if kind == "drag":
        return f"drag({action.x},{action.y}->{action.x2},{action.y2})"
    if kind == "scroll":
        return f"scroll({action.x},{action.y},dy={action.dy})"
    if action.x is not None:
        return f"{kind}({action.x},{action.y})"
    return f"{kind}()"


def why_unplayable(action: Any, env: Any) -> str | None:
    """Why ``encode_action`` gave None for ``action`` (None: a skippable step, dropped as
    cloning drops it). Uses :func:`pointer_bc.refuse_unplayable` for a missing kind."""
    from pixelrl.gui_agent.pointer_bc import SKIPPABLE_KINDS, refuse_unplayable
    from pixelrl.gui_agent.pointer_env import field_text, spec_kind

    spec = env.pointer_spec
    try:
        refuse_unplayable(action, env)
    except ValueError:
        kind = spec_kind(action)
        return (
            f"kind {kind} not in policy.kinds" if kind else f"no pointer kind plays {action.kind}"
        )
    kind = spec_kind(action)
    if action.kind in SKIPPABLE_KINDS and kind not in spec.kinds:
        return None
    if kind == "type":
        text = action.text
        for n in range(len(env.fields)):
            for case in ("", ":upper", ":lower"):  # every template pointer_env's field_text reads
                template = f"{{field:{n}{case}}}"
                if text == field_text(template, env.fields):
                    return f"type field {n}: add '{template}' to policy.texts"
                if text.rstrip("\n") == field_text(template, env.fields):
                    return f"type field {n} + Enter in one text: no template types it"
        return "type a text that is no task field (computed)"
    if kind == "key":
        return f"key {'+'.join(action.keys)} not in policy.keys"
    return f"encode_action refused {action.kind}"


def spec_choice(sample: Any, spec: Any) -> str:
    """The spec entry an encoded sample chose: its kind, and the text or key it types."""
    kind = spec.kinds[int(sample[0])]
    if kind == "type":
        return f"type {spec.texts[int(sample[3])]}"
    if kind == "key":
        return f"key {spec.keys[int(sample[4])]}"
    return kind


def probe_task(task: str, env: Any, episodes: int, seed: int, decoded: bool) -> dict[str, Any]:
    """Play the oracle ``episodes`` times on ``env`` (a PointerEnv of ``task``'s training seeds)
    as :func:`~pixelrl.gui_agent.pointer_bc.expert_samples` does, checking every action."""
    from pixelrl.envs.families import expert_of
    from pixelrl.envs.gui_action import Action
    from pixelrl.envs.web.oracle import OracleError
    from pixelrl.gui_agent.pointer_env import SCROLL_NOTCHES, decode_action, encode_action

    spec = env.pointer_spec
    reasons: dict[str, list[str]] = {}  # reason -> the first actions that had it
    notes: dict[str, str] = {}
    lengths, successes, errors, encoded = [], 0, [], 0
    used: set[str] = set()  # the spec's kinds, texts and keys the encoded steps chose
    for episode in range(episodes):
        obs, info = env.reset(seed=seed) if episode == 0 else env.reset()
        scripted = expert_of(env)
        scripted.reset()
        steps, done = 0, False
        while not done:
            try:
                expert = scripted.act()
            except OracleError as e:  # a page the oracle cannot read: the episode fails
                errors.append(str(e).splitlines()[0][:160])
                expert = Action.fail()
            sample = encode_action(expert, spec, env.image_map, env.fields)
            if sample is None:
                reason = why_unplayable(expert, env)
                if reason:  # up to two examples a reason
                    seen = reasons.setdefault(reason, [])
                    if len(seen) < 2 and describe(expert) not in seen:
                        seen.append(describe(expert))
                play = expert
            else:
                encoded += 1
                used.add(spec_choice(sample, spec))
                play = decode_action(sample, spec, env.image_map, env.fields) if decoded else expert
            if expert.kind == "scroll" and abs(expert.dy) != SCROLL_NOTCHES:
                notes.setdefault(
                    f"scroll of {abs(expert.dy)} notches; the spec's is {SCROLL_NOTCHES}",
                    describe(expert),
                )
            obs, _, terminated, truncated, info = env.step_action(play)
            steps += 1
            done = terminated or truncated
        successes += bool(info.get("success"))
        if truncated and not terminated:
            notes.setdefault("truncated at env.kwargs.max_steps", str(steps))
        lengths.append(steps)
    return {
        "task": task,
        "playable": not reasons,
        "episodes": episodes,
        "oracle_success": successes,
        "oracle_steps": sum(lengths),
        "max_steps": max(lengths),
        "encoded_steps": encoded,
        "reasons": [f"{r}, e.g. {', '.join(a)}" for r, a in reasons.items()],
        "notes": [f"{n} ({a})" for n, a in notes.items()],
        "oracle_errors": errors,
        "uses": sorted(used),
    }


def print_table(rows: list[dict[str, Any]], human: dict[str, float]) -> None:
    print(f"\n{'task':30s} {'playable':8s} {'eps':>3s} {'ok':>3s} {'steps':>5s} {'max':>3s} "
          f"{'human':>5s}  reason / notes")  # fmt: skip
    for r in rows:
        h = f"{human[r['task']]:.2f}" if r["task"] in human else "    -"
        why = "; ".join(
            r["reasons"] + r["notes"] + [f"oracle error: {e}" for e in r["oracle_errors"][:1]]
        )
        print(f"{r['task']:30s} {'yes' if r['playable'] else 'NO':8s} {r['episodes']:3d} "
              f"{r['oracle_success']:3d} {r['oracle_steps']:5d} {r['max_steps']:3d} {h:>5s}  {why}")  # fmt: skip
    playable = [r["task"] for r in rows if r["playable"]]
    published = [t for t in playable if t in human]
    print(f"\nplayable: {len(playable)} of {len(rows)} tasks; with published human figures: "
          f"{len(published)}", end="")  # fmt: skip
    if published:
        print(f", human mean over them {sum(human[t] for t in published) / len(published):.3f}")
    else:
        print()
    flawless = [r["task"] for r in rows if r["playable"] and r["oracle_success"] == r["episodes"]]
    print(f"playable and the oracle succeeded every episode: {len(flawless)}")
    print(f"longest oracle episode: {max((r['max_steps'] for r in rows), default=0)} steps")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "overrides", nargs="*", help="dotted config overrides, e.g. policy.keys=[enter]"
    )
    ap.add_argument(
        "--config", default=DEFAULT_CONFIG, help=f"a gui/miniwob YAML (default {DEFAULT_CONFIG})"
    )
    ap.add_argument("--tasks", nargs="+", help="task names (default: every task the oracle plays)")
    ap.add_argument("--episodes", type=int, default=3, help="training episodes a task (default 3)")
    ap.add_argument("--seed", type=int, default=0, help="task i draws from seed + 1000 i")
    ap.add_argument("--max-steps", type=int, default=64,
                    help="env.kwargs.max_steps while probing (default 64; 0: the config's)")  # fmt: skip
    ap.add_argument("--decoded", action="store_true",
                    help="play the policy's decoding of each encoded step, not the oracle's action")  # fmt: skip
    ap.add_argument(
        "--reader", action="store_true", help="keep policy.reader (slower; same verdict)"
    )
    ap.add_argument("--json", help="write the rows and settings here")
    args = ap.parse_args()
    if args.episodes < 1:
        ap.error("--episodes must be >= 1")

    import gymnasium as gym

    import pixelrl.envs  # noqa: F401  (registers pixelrl/MiniWoB-* and the miniwob family)
    from pixelrl.config import ConfigError
    from pixelrl.envs.web.oracle import SUPPORTED_TASKS
    from pixelrl.gui_agent import ppo_task
    from pixelrl.gui_agent.miniwob_task import pointer_spec, tasks_of
    from pixelrl.gui_agent.pointer_env import PointerEnv, SplitSeeds
    from pixelrl.train import config_for

    sys.path.insert(0, str(HERE))
    from miniwob_table import TABLE

    try:
        cfg = config_for(args.config, args.overrides)
        cfg.env.tasks = list(args.tasks or SUPPORTED_TASKS)
        tasks = tasks_of(
            cfg, need_oracle=True
        )  # one line for an unknown task or one without oracle
        spec = pointer_spec(cfg)
    except (ConfigError, ValueError) as e:
        ap.error(str(e).splitlines()[0])
    if not args.reader:
        spec = replace(spec, reader=False)
    from pixelrl.envs import task_family

    family = task_family("miniwob")
    kwargs = ppo_task.env_kwargs(cfg, "train")
    if args.max_steps > 0:
        kwargs["max_steps"] = args.max_steps
    print(f"spec: kinds={list(spec.kinds)} texts={list(spec.texts)} keys={list(spec.keys)}")
    human = {task: figures[0] for task, figures in TABLE.items()}
    rows, start, cpu = [], time.time(), time.process_time()
    for i, task in enumerate(tasks):
        t0 = time.time()
        env = PointerEnv(SplitSeeds(gym.make(family.env_id(task), **kwargs), "train"), spec)
        try:
            row = probe_task(task, env, args.episodes, args.seed + 1000 * i, args.decoded)
        except Exception as e:  # noqa: BLE001 - a crash is a row, and the probe goes on
            row = {"task": task, "playable": False, "episodes": 0, "oracle_success": 0,
                   "oracle_steps": 0, "max_steps": 0, "encoded_steps": 0,
                   "reasons": [f"crashed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"],
                   "notes": [], "oracle_errors": [], "uses": []}  # fmt: skip
        finally:
            env.close()
        row["seconds"] = round(time.time() - t0, 1)
        rows.append(row)
        verdict = "playable" if row["playable"] else "NOT playable: " + "; ".join(row["reasons"])
        print(f"[{i + 1}/{len(tasks)}] {task}: {verdict} ({row['oracle_success']}/{row['episodes']} "
              f"oracle successes, {row['oracle_steps']} steps, {row['seconds']} s)", flush=True)  # fmt: skip
    print_table(rows, human)
    wall, cpu = time.time() - start, time.process_time() - cpu
    print(f"wall {wall / 60:.1f} min, this process's CPU {cpu / 60:.2f} min (Chromium not counted)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": args.config, "overrides": args.overrides, "episodes": args.episodes,
                       "seed": args.seed, "max_steps": kwargs.get("max_steps"),
                       "decoded": args.decoded, "spec": spec.to_dict(), "rows": rows}, f, indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
