"""Navigation demonstrations (:mod:`pixelrl.embodied.vlm_train`'s ``embodied/vlm-sft``): the
shortest-path follower's episodes recorded through the demonstration recorder (PNG frames), and
what each recorded step teaches: (image, goal text, history) -> the follower's next run of
actions (``move_forward(3)``, at most ``agent.max_repeat``)."""

from __future__ import annotations

from pathlib import Path

from pixelrl.config import Config, ConfigError
from pixelrl.embodied.vlm_agent import TASKS, AgentSpec
from pixelrl.embodied.vlm_spec import make_env
from pixelrl.envs import task_family
from pixelrl.envs.nav.tasks import IDLE, IDLE_INDEX
from pixelrl.rl.text.demos import load_examples, record_expert
from pixelrl.rl.text.rows import Example, Prompt


def record_demonstrations(cfg: Config, root: Path) -> Path:
    """``data.episodes`` follower episodes on training starts, through the recorder (PNG)."""
    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(make_env(cfg, "train"), root, frame_format="png")
    seeds = task_family("navigation").seeds.seeds("train", int(cfg.data.episodes))
    record_expert(env, seeds, _follower, "follower demos", cfg.train.progress)
    return root


def _follower(env):
    """The shortest-path follower's next action from where the agent stands, as a function."""
    follower, nav = env.unwrapped.shortest_path_follower(), env.unwrapped
    return lambda: follower.get_next_action(nav.state.position, nav.state.yaw)


def target_run(actions: list[int], t: int, max_repeat: int) -> list[int]:
    """The follower's next action at step ``t`` repeated while it repeats (at most ``max_repeat``)."""
    run = [actions[t]]
    while (
        len(run) < max_repeat
        and t + len(run) < len(actions)
        and actions[t + len(run)] == actions[t]
    ):
        run.append(actions[t])
    return run


def sft_examples(
    roots: list[Path], spec: AgentSpec, codec, inflection_weight: float = 1.0
) -> list[Example]:
    """Every step of the recorded episodes as (image, goal text, history) -> the follower's next
    run of actions, drawn with ``weight`` ``inflection_weight`` where the follower's action
    differs from its previous one (and at the first step), else 1."""

    def check(data, root: Path) -> None:
        if data.info.env_id not in TASKS:
            raise ConfigError(
                f"data.dataset: {root} records {data.info.env_id}, not a navigation task"
            )

    def to_examples(data, e: int) -> list[Example]:
        # a recorded idle turn reads back as "idle" (what env.step takes), stored as -1
        actions = [IDLE_INDEX if a == IDLE else int(a) for a in data.actions(e)]
        frames, examples = [], []
        for t in range(len(actions)):
            frames.append(data.observation(e, t))
            history = tuple(spec.prompt.history(actions[:t], codec))
            prompt = Prompt(
                spec.prompt.image(frames), spec.prompt.goal(frames[-1], spec.task), history
            )
            weight = inflection_weight if t == 0 or actions[t] != actions[t - 1] else 1.0
            examples.append(
                Example(prompt, codec.render(target_run(actions, t, spec.max_repeat)), weight)
            )
        return examples

    return load_examples(roots, to_examples, check)
