"""``pixelrl record``: record episodes of an env played by an expert, a random agent or a person.

    pixelrl record --env pixelrl/Desktop-ClickButton-v0 --agent expert --episodes 20 --out demos/
    pixelrl record --env pixelrl/PointNav-v0 --agent random --episodes 5 --out nav/ --seed 3
    pixelrl record --env pixelrl/PointNav-v0 --agent checkpoint runs/pointnav --episodes 5 --out bc/
    pixelrl record --env pixelrl/PointNav-v0 --agent vlm runs/nav-vlm-sft/model --episodes 5 --out v/
    pixelrl record --env pixelrl/XDesktop-TkCounterThree-v0 --agent human --episodes 1 --out mine/
    pixelrl record --env pixelrl/MiniWoB-click-button-v0 --agent expert --episodes 200 --out d/ --ray-workers 8

Episode ``k`` is reset with seed ``--seed + k`` (replay re-runs it from that seed), so a run
records the seeds ``--seed`` .. ``--seed + --episodes - 1``. ``--resume`` appends to an existing
folder and records only the seeds of that range it does not hold yet: the same command after a
killed run completes the requested count, and never records a seed twice. ``checkpoint`` plays a policy trained by ``pixelrl train`` (its
recipe rebuilds it); ``human`` lets a person act on the X11 env's own Xvfb display (F12 ends an
episode) and stores the screenshot taken before each action; only input from the display's input
devices counts, not what its clients inject (XTEST, XSendEvent). An action the env refuses (an
expert written for another screen size) ends the command in one line. ``--ray-workers N`` plays the
expert or random agent in N Ray workers (``pixelrl.envs.recording.remote``: the same seeds, into
the one dataset, an episode a worker fault cut short played again).
"""

from __future__ import annotations

import argparse

from pixelrl import registry
from pixelrl.checkpoint import load_checkpoint
from pixelrl.cli import UsageError
from pixelrl.commands.args import (
    add_threads_argument,
    agent_action,
    env_id,
    json_object,
    make_env,
    positive_float,
    positive_int,
    use_threads,
)
from pixelrl.recipes import get_recipe


def file_agents() -> list[str]:
    """Agents a domain plays from a folder (``vlm``: :mod:`pixelrl.registry`, kind
    ``"record_agent"``)."""
    return registry.names("record_agent")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "record",
        help="record episodes (expert, random, checkpoint, human)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--env", type=env_id, required=True,
                   help="env id, e.g. pixelrl/Desktop-ClickButton-v0")  # fmt: skip
    agents = ("expert", "random", "checkpoint", *file_agents(), "human")
    p.add_argument("--agent", nargs="+", default=("expert", None), metavar="AGENT",
                   action=agent_action(agents, ("checkpoint", *file_agents())),
                   help="expert | random | checkpoint PATH | vlm FOLDER (a navigation VLM "
                   "agent; its answers go in each step's info as agent_text) | human")  # fmt: skip
    p.add_argument("--episodes", type=positive_int, default=10,
                   help="seeds --seed .. --seed + N - 1 (with --resume: those not recorded yet)")  # fmt: skip
    p.add_argument("--out", required=True, help="dataset folder")
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed + k")
    p.add_argument("--env-kwargs", type=json_object, default=None, metavar="JSON",
                   help='env options, e.g. \'{"screen_size": [640, 400]}\' (checkpoint: '
                   "default the ones it was trained with)")  # fmt: skip
    p.add_argument("--frames", choices=("auto", "png", "mp4"), default="auto",
                   help="frame storage: auto = PNG for GUI, MP4 for camera frames")  # fmt: skip
    p.add_argument("--resume", action="store_true", help="append to an existing dataset")
    p.add_argument("--ray-workers", type=positive_int, default=None, metavar="N",
                   help="expert / random: play in N Ray workers (a local cluster, or RAY_ADDRESS)")  # fmt: skip
    p.add_argument("--per-worker", type=positive_int, default=1,
                   help="with --ray-workers: envs per worker")  # fmt: skip
    p.add_argument("--max-seconds", type=positive_float, default=300.0,
                   help="human mode: per episode")  # fmt: skip
    p.add_argument("--allow-user-display", action="store_true",
                   help="human mode: allow listening on your own display (records your keys)")  # fmt: skip
    add_threads_argument(p, "a checkpoint or vlm agent")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from pixelrl.envs.recording.env_options import replay_kwargs
    from pixelrl.envs.recording.wrapper import RecordEpisodes

    kind, path = args.agent
    env_kwargs = args.env_kwargs
    checkpoint = None
    if kind == "checkpoint":
        checkpoint = load_checkpoint(path)  # CheckpointError: one line
        trained_on = checkpoint["config"].get("env", {})
        if env_kwargs is None and trained_on.get("id") == args.env:
            # the observations it learned on; a checkpoint is data from anyone: it chooses
            # only the options that shape an episode, never a display or a path
            env_kwargs = replay_kwargs(args.env, dict(trained_on.get("kwargs") or {}), None,
                                       str(path), source="a checkpoint")  # fmt: skip
    elif kind in file_agents():
        # the agent file's options (an agent of another task: one line)
        trained_with = registry.resolve("record_agent", kind).env_kwargs(path, args.env)
        if env_kwargs is None:  # the observations it learned on (as a checkpoint's, above)
            env_kwargs = replay_kwargs(args.env, trained_with, None, str(path),
                                       source="an agent file")  # fmt: skip
    if kind == "checkpoint" or kind in file_agents():  # a model runs here
        use_threads(args)
    env = make_env(args.env, **(env_kwargs or {}))
    if args.ray_workers:
        return _record_in_ray(env, kind, env_kwargs or {}, args)
    if kind == "human":
        return _record_human(env, args)
    try:
        agent = _make_agent(kind, env, checkpoint, args.seed, path)
    except (ValueError, RuntimeError) as e:
        env.close()
        raise UsageError(f"--agent {kind}: {e}") from None
    if kind in file_agents():
        env = _with_agent_text(env, agent)
    try:
        env = RecordEpisodes(env, args.out, frame_format=args.frames, resume=args.resume)
    except BaseException:
        env.close()
        raise  # DatasetError (a folder that holds a dataset, a locked one, ...): one line
    seeds = _seeds_to_record(args, [e.seed for e in env.writer.entries])
    from pixelrl.envs.gui_action import ActionError

    try:
        for seed in tqdm(seeds, desc=f"record {args.env}", unit="episode"):
            # the episode's actions depend on its seed alone, as if no run had been cut short
            env.action_space.seed(seed)
            obs, _ = env.reset(seed=seed)
            agent.reset()
            done = False
            while not done:
                action = agent.act(obs)
                try:
                    obs, _, terminated, truncated, _ = env.step(action)
                except ActionError as e:  # e.g. a task's scripted solution on a smaller screen
                    raise UsageError(
                        f"--agent {kind} played {str(action)[:80]!r}, which {args.env} refuses "
                        f"with these options ({e}); episodes finished before it are kept. "
                        "Record with options the agent fits (--env-kwargs)"
                    ) from None
                done = terminated or truncated
    finally:
        env.close()
    _summary(env.episodes, args.out)
    return 0


def _record_in_ray(env, kind: str, env_kwargs: dict, args: argparse.Namespace) -> int:
    """``--ray-workers``: the expert or random agent's episodes played in Ray workers."""
    from pixelrl.envs.recording.remote import expert_actions, random_actions, record_in_ray

    try:
        if kind not in ("expert", "random"):
            raise UsageError(
                f"--ray-workers records the expert or random agent; --agent {kind} plays in this "
                "process (leave --ray-workers out)"
            )
        if kind == "expert" and not hasattr(env.unwrapped, "expert_action"):
            raise UsageError(
                f"--ray-workers: {args.env} has no expert_action() for a worker to play; "
                "record its expert without --ray-workers"
            )
    finally:
        env.close()
    if kind == "expert":
        act = expert_actions
    else:
        seeded = {}

        def act(envs):
            if not seeded:  # the driver draws the actions: one seed for the run
                envs.single_action_space.seed(args.seed)
                seeded[True] = True
            return random_actions(envs)

    from tqdm import tqdm

    total = None if args.resume else args.episodes  # resumed: only the seeds it lacks
    with tqdm(total=total, desc=f"record {args.env} (ray)", unit="episode") as bar:
        entries = record_in_ray(
            args.env,
            env_kwargs,
            lambda recorded: _seeds_to_record(args, recorded),
            args.out,
            act,
            num_workers=args.ray_workers,
            per_worker=args.per_worker,
            resume=args.resume,
            frame_format=args.frames,
            progress=lambda k: bar.update(k - bar.n),
        )
    _summary(entries, args.out)
    return 0


def _with_agent_text(env, agent):
    """The env with each step's info holding the text agent's latest answer (``agent_text``,
    which ``pixelrl view`` captions)."""
    import gymnasium

    from pixelrl.envs.recording.view import AGENT_TEXT_KEY

    class AgentText(gymnasium.Wrapper):
        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return obs, reward, terminated, truncated, {**info, AGENT_TEXT_KEY: agent.last_text}

    return AgentText(env)


def _seeds_to_record(args: argparse.Namespace, recorded: list[int | None]) -> list[int]:
    """The seeds ``--seed`` .. ``--seed + --episodes - 1`` that the dataset does not hold yet
    (all of them for a new dataset); says what a resumed run skips."""
    wanted = range(args.seed, args.seed + args.episodes)
    done = set(recorded) & set(wanted)
    if args.resume and recorded:
        print(
            f"resuming {args.out}: it holds {len(recorded)} episodes, {len(done)} of them "
            f"with seeds in {wanted.start}..{wanted.stop - 1}; recording the other "
            f"{len(wanted) - len(done)}"
        )
    return [s for s in wanted if s not in done]


class _Agent:
    """What the recording loop asks: ``reset()`` at each episode, ``act(obs)`` each step."""

    def __init__(self, act, reset=lambda: None) -> None:
        self.act, self.reset = act, reset


def _make_agent(kind: str, env, checkpoint: dict | None, seed: int, path: str | None = None):
    if kind in file_agents():
        return registry.resolve("record_agent", kind).make(path, env)
    if kind == "expert":
        expert = _expert_for(env)
        if expert is None:
            raise ValueError(f"{env.spec.id} has no scripted expert; use --agent random")
        return expert
    if kind == "random":
        from pixelrl.envs.gui_action import sample_action

        return _Agent(lambda obs: sample_action(env.action_space))
    return _checkpoint_agent(checkpoint, env, seed)


def _checkpoint_agent(checkpoint: dict, env, seed: int) -> _Agent:
    """The checkpoint's policy, rebuilt by its recipe for this env's spaces, sampling actions
    (as in training) from its array observations."""
    import numpy as np
    import torch
    from gymnasium import spaces

    from pixelrl.config import Config

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
    """The env's scripted expert, or None: its task family's (``pixelrl.envs.families.expert_of``: the
    emulated desktop's and MiniWoB++'s ``expert_action()``, an X11 task file's ``solution``),
    except on the embedded navigation env, where the shortest-path follower aims a little inside
    the success radius (as ``pixelrl.embodied.agents.ExpertAgent``), not at its edge as the
    family's expert (the VLM recipes' demonstrations) does."""
    from pixelrl.envs.families import ExpertActionMethod, expert_of

    unwrapped = env.unwrapped
    if hasattr(unwrapped, "state") and hasattr(unwrapped, "cfg"):
        return _inside_radius_follower(unwrapped)
    try:
        expert = expert_of(env)
    except ValueError:  # no family (a user's env), or a family without an expert
        if not hasattr(unwrapped, "expert_action"):
            return None
        expert = ExpertActionMethod(env)  # an env of no family that plans its own actions
    return _Agent(lambda obs: expert.act(), reset=expert.reset)


def _inside_radius_follower(nav) -> _Agent:
    from pixelrl.envs.nav.follower import ShortestPathFollower

    cache = {}

    def follow(obs) -> int:
        state, cfg = nav.state, nav.cfg
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


def _record_human(env, args: argparse.Namespace) -> int:
    from pixelrl.envs.recording.human import record_human_episode
    from pixelrl.envs.recording.wrapper import dataset_info_for
    from pixelrl.envs.recording.writer import DatasetWriter

    info = dataset_info_for(env, frame_format=args.frames, extra={"recorded_by": "human"})
    try:
        writer = DatasetWriter(args.out, info, resume=args.resume)
    except BaseException:
        env.close()
        raise
    entries = []
    try:
        for seed in _seeds_to_record(args, [e.seed for e in writer.entries]):
            entry = record_human_episode(
                env, writer, seed, args.max_seconds, args.allow_user_display
            )
            if entry is None:
                print(f"seed {seed}: no action recorded; skipped")
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
