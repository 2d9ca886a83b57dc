"""``pixelrl record``: record episodes of an env played by an expert, a random agent or a person.

    pixelrl record --env pixelrl/Desktop-ClickButton-v0 --agent expert --episodes 20 --out demos/
    pixelrl record --env pixelrl/PointNav-v0 --agent random --episodes 5 --out nav/ --seed 3
    pixelrl record --env pixelrl/PointNav-v0 --agent checkpoint runs/pointnav --episodes 5 --out bc/
    pixelrl record --env pixelrl/XDesktop-TkCounterThree-v0 --agent human --episodes 1 --out mine/

Episode ``k`` is reset with seed ``--seed + k`` (replay re-runs it from that seed). ``--resume``
appends to an existing folder. ``checkpoint`` plays a policy trained by ``pixelrl train`` (its
recipe rebuilds it); ``human`` lets a person act on the X11 env's own Xvfb display (F12 ends an
episode) and stores the screenshot taken before each action.
"""

from __future__ import annotations

import argparse
import json

AGENTS = ("expert", "random", "checkpoint", "human")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("record", help="record episodes (expert, random, checkpoint, human)")
    p.add_argument("--env", required=True, help="env id, e.g. pixelrl/Desktop-ClickButton-v0")
    p.add_argument("--agent", nargs="+", default=["expert"], metavar="AGENT",
                   help="expert | random | checkpoint PATH | human")  # fmt: skip
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--out", required=True, help="dataset folder")
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed + k")
    p.add_argument("--env-kwargs", default=None, metavar="JSON",
                   help='env options, e.g. \'{"screen_size": [640, 400]}\' (checkpoint: '
                   "default the ones it was trained with)")  # fmt: skip
    p.add_argument("--frames", choices=("auto", "png", "mp4"), default="auto",
                   help="frame storage: auto = PNG for GUI, MP4 for camera frames")  # fmt: skip
    p.add_argument("--resume", action="store_true", help="append to an existing dataset")
    p.add_argument("--max-seconds", type=float, default=300.0, help="human mode: per episode")
    p.add_argument("--allow-user-display", action="store_true",
                   help="human mode: allow listening on your own display (records your keys)")  # fmt: skip
    p.set_defaults(func=run)


def _agent(args: argparse.Namespace) -> tuple[str, str | None]:
    kind, *rest = args.agent
    if kind not in AGENTS:
        raise SystemExit(f"--agent must be one of {', '.join(AGENTS)}, got {kind!r}")
    if kind == "checkpoint" and len(rest) != 1:
        raise SystemExit("--agent checkpoint needs the checkpoint path: --agent checkpoint PATH")
    if kind != "checkpoint" and rest:
        raise SystemExit(f"--agent {kind} takes no argument, got {rest}")
    return kind, (rest[0] if rest else None)


def run(args: argparse.Namespace) -> int:
    import gymnasium
    from tqdm import tqdm

    import pixelrl.envs  # noqa: F401  (registers the ids)
    from pixelrl.envs.recording.format import DatasetError
    from pixelrl.envs.recording.wrapper import RecordEpisodes

    kind, path = _agent(args)
    try:
        env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else None
    except json.JSONDecodeError as e:
        raise SystemExit(f"--env-kwargs is not JSON: {e}") from None
    checkpoint = None
    if kind == "checkpoint":
        checkpoint = _load_checkpoint(path)
        trained_on = checkpoint["config"].get("env", {})
        if env_kwargs is None and trained_on.get("id") == args.env:
            env_kwargs = dict(trained_on.get("kwargs") or {})  # the observations it learned on
    env = gymnasium.make(args.env, **(env_kwargs or {}))
    if kind == "human":
        return _record_human(env, args)
    try:
        agent = _make_agent(kind, env, checkpoint, args.seed)
    except (ValueError, RuntimeError) as e:
        env.close()
        raise SystemExit(f"--agent {kind}: {e}") from None
    try:
        env = RecordEpisodes(env, args.out, frame_format=args.frames, resume=args.resume)
    except DatasetError as e:
        env.close()
        print(f"pixelrl record: {e}")
        return 2
    env.action_space.seed(args.seed)
    try:
        for k in tqdm(range(args.episodes), desc=f"record {args.env}", unit="episode"):
            obs, _ = env.reset(seed=args.seed + k)
            agent.reset()
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(agent.act(obs))
                done = terminated or truncated
    finally:
        env.close()
    _summary(env.episodes, args.out)
    return 0


class _Agent:
    """What the recording loop asks: ``reset()`` at each episode, ``act(obs)`` each step."""

    def __init__(self, act, reset=lambda: None) -> None:
        self.act, self.reset = act, reset


def _make_agent(kind: str, env, checkpoint: dict | None, seed: int) -> _Agent:
    if kind == "expert":
        expert = _expert_for(env)
        if expert is None:
            raise ValueError(f"{env.spec.id} has no scripted expert; use --agent random")
        return expert
    if kind == "random":
        return _Agent(lambda obs: _random_action(env))
    return _checkpoint_agent(checkpoint, env, seed)


def _load_checkpoint(path: str) -> dict:
    from pixelrl.checkpoint import CheckpointError, load_checkpoint

    try:
        return load_checkpoint(path)
    except CheckpointError as e:
        raise SystemExit(f"--agent checkpoint: {e}") from None


def _checkpoint_agent(checkpoint: dict, env, seed: int) -> _Agent:
    """The checkpoint's policy, rebuilt by its recipe for this env's spaces, sampling actions
    (as in training) from its array observations."""
    import numpy as np
    import torch
    from gymnasium import spaces

    from pixelrl.config import Config
    from pixelrl.recipes import get_recipe

    cfg = Config(checkpoint["config"])
    try:
        task = get_recipe(cfg.recipe).load_task()
        policy = task.make_policy(cfg, env.observation_space, env.action_space)
        policy.load_state_dict(checkpoint["policy"])
    except (KeyError, TypeError, RuntimeError, ValueError) as e:
        raise RuntimeError(
            f"the checkpoint's policy does not fit {env.spec.id}: {e}. Record with the env "
            "options it was trained with (--env-kwargs)"
        ) from None
    policy.eval()
    torch.manual_seed(seed)
    keys = [k for k, s in env.observation_space.spaces.items() if isinstance(s, spaces.Box)]
    memory = {"state": None}

    def reset() -> None:
        memory["state"] = policy.initial_state(1)

    @torch.no_grad()
    def act(obs):
        batch = {k: torch.as_tensor(np.asarray(obs[k])[None]) for k in keys}
        actions, _, _, memory["state"] = policy.act(batch, memory["state"])
        if isinstance(actions, dict):
            return {k: v[0].cpu().numpy() for k, v in actions.items()}
        action = actions[0].cpu().numpy()
        return int(action) if isinstance(env.action_space, spaces.Discrete) else action

    return _Agent(act, reset)


def _expert_for(env) -> _Agent | None:
    """The env's scripted expert, or None.

    - GUI envs with ``expert_action()`` (the emulated desktop): that.
    - X11 tasks with a ``solution`` (action text): its steps in order, from each reset.
    - The embedded navigation env: ``pixelrl.envs.nav``'s shortest-path follower on the episode's
      geodesic field, aiming a little inside the success radius (as
      ``pixelrl.embodied.agents.ExpertAgent``; an ``expert_action()`` on the env would replace this).
    """
    unwrapped = env.unwrapped
    if hasattr(unwrapped, "expert_action"):
        return _Agent(lambda obs: unwrapped.expert_action())
    solution = getattr(getattr(unwrapped, "task", None), "solution", None)
    if solution:
        step = {"k": 0}

        def play(obs) -> str:
            step["k"] += 1
            return solution[min(step["k"] - 1, len(solution) - 1)]

        return _Agent(play, reset=lambda: step.update(k=0))
    if not (hasattr(unwrapped, "state") and hasattr(unwrapped, "cfg")):
        return None
    from pixelrl.envs.nav.follower import ShortestPathFollower

    cache = {}

    def follow(obs) -> int:
        state, cfg = unwrapped.state, unwrapped.cfg
        if cache.get("episode") is not state.episode:
            cache["episode"] = state.episode
            cache["follower"] = ShortestPathFollower(
                state.field,
                0.75 * cfg.success_radius,
                cfg.turn_degrees,
                cfg.forward_step,
                cfg.allow_sliding,
            )
        return int(cache["follower"].get_next_action(state.position, state.yaw))

    return _Agent(follow, reset=cache.clear)


def _random_action(env, tries: int = 100):
    """A sample of the action space that is a valid action (a GUI sample can be a scroll of
    zero notches, which no Action is)."""
    from pixelrl.envs.actions import Action, ActionError

    for _ in range(tries):
        sample = env.action_space.sample()
        if not isinstance(sample, dict):
            return sample
        try:
            return Action.from_sample(sample)
        except ActionError:
            continue
    raise RuntimeError(f"no valid action in {tries} samples of {env.action_space}")


def _record_human(env, args: argparse.Namespace) -> int:
    from pixelrl.envs.recording.format import DatasetError
    from pixelrl.envs.recording.human import record_human_episode
    from pixelrl.envs.recording.wrapper import dataset_info_for
    from pixelrl.envs.recording.writer import DatasetWriter

    info = dataset_info_for(env, frame_format=args.frames, extra={"recorded_by": "human"})
    try:
        writer = DatasetWriter(args.out, info, resume=args.resume)
    except DatasetError as e:
        env.close()
        print(f"pixelrl record: {e}")
        return 2
    entries = []
    try:
        for k in range(args.episodes):
            entry = record_human_episode(
                env, writer, args.seed + k, args.max_seconds, args.allow_user_display
            )
            if entry is None:
                print(f"episode {k}: no action recorded; skipped")
            else:
                entries.append(entry)
    finally:
        writer.close()
        env.close()
    _summary(entries, args.out)
    return 0


def _summary(entries, out: str) -> None:
    print(f"\n{'episode':>7} {'steps':>5} {'return':>8} {'success':>7}")
    for e in entries:
        print(f"{e.episode_index:>7} {e.length:>5} {e.total_reward:>8.3f} {str(e.success):>7}")
    wins = [e.success for e in entries if e.success is not None]
    rate = f"{100 * sum(wins) / len(wins):.0f}%" if wins else "n/a"
    print(f"{len(entries)} episodes written to {out}; success rate {rate}")
