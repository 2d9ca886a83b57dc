"""Training recipes for the navigation vision-language agent: ``embodied/vlm-sft`` and
``embodied/vlm-grpo`` (``pixelrl train embodied/vlm-sft [key=value ...]``, ``--model NAME``).

The agent is :mod:`pixelrl.embodied.vlm_agent`: a :class:`~pixelrl.vision.vlm.VLMPolicy` with the
navigation codec; it sees the egocentric frame and the goal in words and answers with actions
such as ``turn_left(2)`` or ``move_forward(3)``.

- ``embodied/vlm-sft``: behaviour cloning of the shortest-path follower. Its episodes are
  recorded through the demonstration recorder (:class:`~pixelrl.envs.recording.RecordEpisodes`,
  PNG frames) into ``<output_dir>/demos`` -- or read from ``data.dataset``, any recording of a
  navigation env -- and loaded back with :class:`~pixelrl.envs.recording.EpisodeDataset`: one
  data path for demonstrations, whoever recorded them. Every step is an example; its target is
  the run of the follower's next action from there (``move_forward(3)``, at most
  ``agent.max_repeat``), so the model learns multi-step answers.
- ``embodied/vlm-grpo``: multi-turn GRPO. Each step plays ``grpo.num_samples`` episodes from each
  of ``grpo.starts_per_step`` training starts (same seed: same scene, start and goal), sampling
  the answers; every turn's reward is verifiable: geodesic progress over its low-level steps,
  the slack, Success and SPL at the end, a format penalty for an unparsable answer
  (``grpo.rewards``); or, with ``grpo.reward: time_decayed``, VLN-R1's time-decayed agreement
  of the answer's steps with the follower's (plus Success). Advantages are episode-level plus
  GiGPO step-level from anchor states (the same frame and goal text in one group).

Evaluation (``eval.episodes`` held-out episodes: ``env.eval_kwargs``' scenes, greedy answers)
reports Success with its 95% interval, SPL and the share of parsed answers. Validation
(``eval.val_episodes`` episodes in ``env.val_kwargs``' scenes: training-side apartments that
neither training nor the held-out test uses, checked at config time) chooses the kept model by
``eval.val_measure`` (Success or SPL): ``model/`` is the best-validated checkpoint, and GRPO
stops after ``eval.patience`` checks past its warm-up without a better one. With
``grpo.replay_failed`` a share of GRPO's starts are training starts whose last group did not all
succeed (prioritized level replay, Jiang et al. 2021: learn where there is something to
learn). The run folder holds ``model/`` (:func:`~pixelrl.embodied.vlm_agent.save_agent`:
weights, processor and the agent's json, what ``pixelrl bench nav --agent vlm RUN/model``
loads), ``history.csv``, ``eval.csv`` and ``learning_curve.png``.

The recipes are a task adapter (:class:`NavTask`) of the one text-policy trainer
(:mod:`pixelrl.rl.text`): this module says what a navigation prompt, demonstration, turn reward
(measures composed by ``grpo.rewards``), episode and held-out evaluation are; the loops are the
trainer's.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError, check_ranges, load_config
from pixelrl.embodied.vlm_agent import TASKS, AgentSpec, NavPrompt, VLMNavAgent, goal_text
from pixelrl.envs import task_family
from pixelrl.envs.nav.tasks import IDLE, IDLE_INDEX, STOP
from pixelrl.rl.text import recipe as text
from pixelrl.rl.text.config import check_text_config, text_defaults
from pixelrl.rl.text.rollout import TurnResult, play_episodes
from pixelrl.rl.text.rows import Episode, Example, Prompt
from pixelrl.stats import wilson_interval

DEFAULTS: dict[str, Any] = text_defaults({
    "model": "tiny-smolvlm",
    "tokenizer": {"vocab_size": 800},  # tiny-<family>: BPE over the codec's and goals' words
    "env": {
        "id": "pixelrl/PointNav-v0",
        "kwargs": {},  # pixelrl.envs.nav options (NavConfig), checked key by key
        "eval_kwargs": {},  # on top of kwargs for held-out episodes (another scene_seed)
        # on top of kwargs for validation episodes: training-side scenes not trained on (never
        # the held-out ones; checked), used when eval.val_episodes > 0
        "val_kwargs": {},
    },
    "agent": {"max_repeat": 4, "max_steps": 8, "max_new_tokens": 16},
    "prompt": {"depth": False, "memory_frames": 0, "history_steps": 8, "distance_floor": False},
    "data": {"dataset": "", "episodes": 200},
    # inflection_weight: how much more often a step where the follower's action changes (every
    # stop, every turn onto a new heading) is drawn than the rest (VLN-CE's inflection weighting)
    "sft": {"steps": 500, "batch_size": 16, "inflection_weight": 1.0},
    "grpo": {
        "num_samples": 4,  # G: episodes per start
        "starts_per_step": 2,
        "reward": "measures",  # or "time_decayed" (VLN-R1)
        # early_stop: a stop away from the goal also pays the slack of the steps it leaves
        # unused (x this weight), so ending a failing episode early never saves reward
        "rewards": {"progress": 1.0, "slack": -0.01, "success": 2.5, "spl": 1.0, "format": 0.1,
                    "early_stop": 0.0},
        "decay": 0.8,  # time_decayed: weight of the answer's i-th step is decay**i
        # the chance that a start is drawn again from the training starts whose last group did
        # not all succeed (prioritized level replay's idea: the starts left to learn from)
        "replay_failed": 0.0,
    },
    # val_episodes: validation episodes (env.val_kwargs' scenes) that choose the kept model;
    # val_measure: what "better" means there (spl is finer than success on few episodes)
    "eval": {"interval": 10, "episodes": 40, "val_episodes": 0, "val_measure": "success"},
})  # fmt: skip
REWARD_KINDS = ("measures", "time_decayed")
VAL_MEASURES = ("success", "spl")
REPLAY_SIZE = 256  # failed starts remembered for grpo.replay_failed (the oldest go first)


# -- set-up -------------------------------------------------------------------------------------
POSITIVE = (
    "sft.steps", "sft.batch_size", "sft.lr", "grpo.num_samples", "grpo.starts_per_step",
    "grpo.steps", "grpo.lr", "grpo.minibatch", "agent.max_repeat", "agent.max_steps",
    "agent.max_new_tokens",
)  # fmt: skip
NON_NEGATIVE = ("sft.inflection_weight", "data.episodes", "eval.episodes", "eval.interval", "prompt.memory_frames",
                "prompt.history_steps", "eval.val_episodes", "grpo.rewards.early_stop")  # fmt: skip


def config_for(recipe_config: str | Path, overrides=()) -> Config:
    """The recipe's config with ``overrides``; values no run can use are a :class:`ConfigError`
    here, before any work."""
    cfg = load_config(recipe_config, list(overrides), DEFAULTS)
    check_ranges(cfg, POSITIVE, NON_NEGATIVE)
    check_text_config(cfg)
    task_of(cfg)
    if not isinstance(cfg.prompt.distance_floor, bool):
        raise ConfigError(
            f"prompt.distance_floor must be true or false, got {cfg.prompt.distance_floor!r}"
        )
    if int(cfg.eval.val_episodes):
        check_validation_scenes(cfg)
    check_prompt_sensors(cfg)
    if cfg.eval.val_measure not in VAL_MEASURES:
        raise ConfigError(
            f"eval.val_measure: {cfg.eval.val_measure!r}; known: {', '.join(VAL_MEASURES)}"
        )
    replay = cfg.grpo.replay_failed
    if isinstance(replay, bool) or not isinstance(replay, int | float) or not 0 <= replay <= 1:
        raise ConfigError(f"grpo.replay_failed must be a number in [0, 1], got {replay!r}")
    return cfg


def check_prompt_sensors(cfg: Config) -> None:
    """:class:`ConfigError` when the prompt draws a frame that no split's env renders
    (``prompt.depth: true`` without ``depth`` in the sensors: a KeyError at the first turn)."""
    from pixelrl.envs.nav.config import NavConfig

    if cfg.prompt.depth is not True:
        return  # not a bool: the agent spec names the key (AgentSpec.validate)
    for split in ("train", "eval", "val"):
        sensors = env_kwargs(cfg, split).get("sensors", NavConfig.sensors)
        if "depth" not in sensors:
            where = "env.kwargs" if split == "train" else f"env.{split}_kwargs"
            raise ConfigError(
                f"prompt.depth: true draws the depth frame, but {where} renders sensors "
                f"{list(sensors)}; add it: env.kwargs.sensors=[rgb,depth]"
            )


def scene_set(cfg: Config, split: str) -> set:
    """The scenes ``split``'s episodes are drawn from: mesh paths, or procedural apartment
    seeds (``scene_seed`` .. ``scene_seed + num_scenes - 1``)."""
    from pixelrl.envs.nav.config import NavConfig

    kwargs = env_kwargs(cfg, split)
    if kwargs.get("scenes"):
        return {str(s) for s in kwargs["scenes"]}
    seed = int(kwargs.get("scene_seed", NavConfig.scene_seed))
    return set(range(seed, seed + int(kwargs.get("num_scenes", NavConfig.num_scenes))))


def check_validation_scenes(cfg: Config) -> None:
    """:class:`ConfigError` unless the validation scenes (``env.val_kwargs``) share none with
    the held-out test scenes (``env.eval_kwargs``) nor with the training ones: a kept model
    chosen on test scenes would make the held-out figure a selected one."""
    val = scene_set(cfg, "val")
    for split, what in (
        ("eval", "held-out test (env.eval_kwargs)"),
        ("train", "training (env.kwargs)"),
    ):
        shared = val & scene_set(cfg, split)
        if shared:
            raise ConfigError(
                f"env.val_kwargs: validation scenes overlap the {what} scenes "
                f"({len(shared)} shared, e.g. {sorted(shared, key=str)[0]}); give val_kwargs "
                "another scene_seed or scenes"
            )


def env_kwargs(cfg: Config, split: str) -> dict[str, Any]:
    """The env options of ``split`` (checked against NavConfig; eval adds ``eval_kwargs``, val
    ``val_kwargs``)."""
    from pixelrl.embodied.task import env_kwargs as nav_kwargs

    return nav_kwargs(cfg, split)


def task_of(cfg: Config) -> str:
    if cfg.env.id not in TASKS:
        raise ConfigError(f"env.id: {cfg.env.id!r} is not a navigation task ({', '.join(TASKS)})")
    return TASKS[cfg.env.id]


def make_env(cfg: Config, split: str):
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401  (registers the ids)

    return gym.make(cfg.env.id, **env_kwargs(cfg, split))


def agent_spec(cfg: Config) -> AgentSpec:
    try:
        prompt = NavPrompt(**cfg.prompt.to_dict())
        return AgentSpec(
            task=task_of(cfg), prompt=prompt, env_kwargs=env_kwargs(cfg, "train"),
            **{k: int(v) for k, v in cfg.agent.to_dict().items()},
        )  # fmt: skip
    except TypeError as e:
        raise ConfigError(f"agent / prompt: {e}") from None


def codec_for(spec: AgentSpec, env) -> Any:
    nav = env.unwrapped.cfg
    return spec.codec(nav.forward_step, nav.turn_degrees)


def goal_corpus(task: str, seed: int = 0, n: int = 400) -> list[str]:
    """Goal sentences for a tiny tokenizer (so ``degrees`` and category names are one token)."""
    from pixelrl.envs.nav.scene import OBJECTNAV_CATEGORIES

    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        obs = {
            "pointgoal_with_gps_compass": [rng.uniform(0, 10), rng.uniform(-np.pi, np.pi)],
            "objectgoal": [rng.integers(len(OBJECTNAV_CATEGORIES))],
        }
        texts += [goal_text(obs, "pointnav"), goal_text(obs, "objectnav")]
    return texts


def check_model(cfg: Config) -> None:
    """:class:`ConfigError` for a ``model`` / ``init`` that cannot load, before any work."""
    from pixelrl.vision.vlm import model_source_problem

    key = "init" if cfg.init else "model"
    problem = model_source_problem(str(cfg.init or cfg.model))
    if problem:
        raise ConfigError(f"{key}: {problem}")


# -- playing episodes -----------------------------------------------------------------------------
MEASURES = ("success", "spl", "softspl", "distance_to_goal", "num_steps")


def measure_reward(rewards: dict[str, float], before: float, info: dict[str, Any], steps: int,
                   parsed: bool, done: bool, unused: int = 0) -> float:  # fmt: skip
    """A turn's reward from the navigation measures, weighted by ``rewards`` (``grpo.rewards``):
    ``slack`` a low-level step, ``format`` off when the answer did not parse, ``progress`` a
    metre of geodesic distance gained since ``before``, and at the episode's end ``early_stop``
    x the slack of the ``unused`` steps a stop short of the goal left (:func:`unused_steps`), then
    ``success`` and ``spl``. The multi-turn trainer and the TRL environment
    (:mod:`pixelrl.embodied.trl_env`) both score turns with it."""
    reward = rewards["slack"] * steps - rewards["format"] * (not parsed)
    after = info["distance_to_goal"]
    if np.isfinite(before) and np.isfinite(after):
        reward += rewards["progress"] * (before - after)
    if done:
        reward += early_stop_penalty(rewards, unused)
        reward += rewards["success"] * info["success"]
        reward += rewards["spl"] * info["spl"]
    return float(reward)


def early_stop_penalty(rewards: dict[str, float], unused: int) -> float:
    """``early_stop`` x the slack of the steps a stop short of the goal did not take: stopping at
    once then scores no better than walking to the step limit."""
    return rewards.get("early_stop", 0.0) * rewards["slack"] * max(0, unused)


def unused_steps(env, info: dict[str, Any], stopped: bool) -> int:
    """The steps of the episode's budget left when the agent ``stopped`` short of the goal (0 when
    it did not stop, or stopped at the goal)."""
    if not stopped or info["success"]:
        return 0
    limit = (env.spec and env.spec.max_episode_steps) or env.unwrapped.cfg.max_episode_steps
    return int(limit - info["num_steps"])


class NavGroup:
    """Navigation episodes, one in each of ``envs`` (``envs[i].reset(seed=seeds[i])``): the env
    group of :func:`pixelrl.rl.text.rollout.play_episodes`.

    A parsed answer's low-level steps run in order until the episode ends; an unparsable one runs
    nothing (``IDLE``: one step of the budget). A turn's reward is the measures ``rewards``
    composes: geodesic progress over its steps, the slack, a format penalty, and Success and SPL
    at the end; or, with ``reward_kind="time_decayed"``, VLN-R1's time-decayed agreement of the
    answer's steps with the shortest-path follower's (plus Success)."""

    screen = None  # navigation answers hold no points

    def __init__(self, policy, spec: AgentSpec, envs: list, seeds: list[int],
                 rewards: dict[str, float] | None = None, reward_kind: str = "measures",
                 decay: float = 0.8) -> None:  # fmt: skip
        self.envs, self.n, self.max_new_tokens = envs, len(envs), spec.max_new_tokens
        self.rewards = rewards or DEFAULTS["grpo"]["rewards"]
        self.reward_kind, self.decay = reward_kind, decay
        self.agents = [VLMNavAgent(policy, spec) for _ in envs]  # their frames and history
        self.infos = []
        for agent, env, seed in zip(self.agents, envs, seeds):
            obs, info = env.reset(seed=seed)
            agent.frames.append(obs)
            self.infos.append(info)
        self.followers = [env.unwrapped.shortest_path_follower() for env in envs]

    def prompts(self, active: list[int]) -> list[Prompt]:
        out = []
        for i in active:
            image, goal, history = self.agents[i].prompt()
            out.append(Prompt(image, goal, tuple(history)))
        return out

    def step(self, completions: dict) -> dict[int, TurnResult]:
        return {i: self._turn(i, c) for i, c in completions.items()}

    def _turn(self, i: int, completion) -> TurnResult:
        env, agent, state = self.envs[i], self.agents[i], self.envs[i].unwrapped.state
        before, steps, matches, done = self.infos[i]["distance_to_goal"], 0, [], False
        if not completion.parsed:  # nothing is executed; the turn still costs a step
            _, _, terminated, truncated, self.infos[i] = env.step(IDLE)
            steps, done = 1, terminated or truncated
        else:
            for action in completion.action:
                expert = self.followers[i].get_next_action(state.position, state.yaw)
                matches.append(action == expert)
                obs, _, terminated, truncated, self.infos[i] = env.step(action)
                agent.executed.append(action)
                agent.frames.append(obs)
                steps, done = steps + 1, terminated or truncated
                if done:
                    break
        info = self.infos[i]
        stopped = bool(agent.executed) and agent.executed[-1] == STOP
        unused = unused_steps(env, info, stopped) if done else 0
        if (
            self.reward_kind == "time_decayed"
        ):  # VLN-R1: the answer's steps that agree with the expert
            weights = self.decay ** np.arange(len(matches))
            reward = float(np.dot(weights, matches) / weights.sum()) if matches else 0.0
            if done:
                reward += early_stop_penalty(self.rewards, unused)
                reward += self.rewards["success"] * info["success"]
        else:
            reward = measure_reward(
                self.rewards, before, info, steps, completion.parsed, done, unused
            )
        if not done:
            return TurnResult(float(reward), False)
        measures = {k: float(info[k]) for k in MEASURES}
        return TurnResult(float(reward), True, bool(info["success"]), measures)


def play(policy, spec: AgentSpec, envs: list, seeds: list[int], sample: bool, temperature: float = 1.0,
         rewards: dict[str, float] | None = None, reward_kind: str = "measures", decay: float = 0.8,
         ) -> list[Episode]:  # fmt: skip
    """One episode in each env, all played together (:class:`NavGroup`): one batched
    ``generate`` per turn for every env still running."""
    group = NavGroup(policy, spec, envs, seeds, rewards, reward_kind, decay)
    return play_episodes(policy, group, sample=sample, temperature=temperature)


def evaluate(policy, spec: AgentSpec, envs: list, seeds: list[int]) -> dict[str, float]:
    """Greedy episodes from ``seeds`` (held-out starts), ``len(envs)`` at a time."""
    was_training = policy.model.training
    policy.model.eval()
    episodes = []
    for s in range(0, len(seeds), len(envs)):
        chunk = seeds[s : s + len(envs)]
        episodes += play(policy, spec, envs[: len(chunk)], chunk, sample=False)
    policy.model.train(was_training)
    success = [e.measures["success"] for e in episodes]
    low, high = wilson_interval(int(sum(success)), len(success))
    parsed = [t.completion.parsed for e in episodes for t in e.turns]
    return {
        "success": float(np.mean(success)), "ci_low": low, "ci_high": high,
        "spl": float(np.mean([e.measures["spl"] for e in episodes])),
        "format": float(np.mean(parsed)), "turns": float(np.mean([len(e.turns) for e in episodes])),
        "n": len(episodes),
    }  # fmt: skip


# The navigation family's seed split: held-out scenes already differ (eval_kwargs), the seeds
# differ too; validation starts are on val_kwargs' scenes.
NAV_SEEDS = task_family("navigation").seeds
EVAL_SEED_BASE, VAL_SEED_BASE = NAV_SEEDS.seed("eval", 0), NAV_SEEDS.seed("val", 0)


# -- SFT ------------------------------------------------------------------------------------------
def record_demonstrations(cfg: Config, root: Path) -> Path:
    """``data.episodes`` follower episodes on training starts, through the recorder (PNG)."""
    from tqdm import tqdm

    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(make_env(cfg, "train"), root, frame_format="png")
    for seed in tqdm(NAV_SEEDS.seeds("train", int(cfg.data.episodes)), desc="follower demos",
                     disable=not cfg.train.progress):  # fmt: skip
        env.reset(seed=seed)
        follower = env.unwrapped.shortest_path_follower()
        done = False
        while not done:
            state = env.unwrapped.state
            action = follower.get_next_action(state.position, state.yaw)
            _, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    env.close()
    return root


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
    from pixelrl.envs.recording import EpisodeDataset

    examples = []
    for root in roots:
        data = EpisodeDataset(root)
        if data.info.env_id not in TASKS:
            raise ConfigError(
                f"data.dataset: {root} records {data.info.env_id}, not a navigation task"
            )
        for e in data.episodes:
            # a recorded idle turn reads back as "idle" (what env.step takes), stored as -1
            actions = [IDLE_INDEX if a == IDLE else int(a) for a in data.actions(e)]
            frames = []
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
    if not examples:
        raise ConfigError(f"no demonstration steps in {[str(r) for r in roots]}")
    return examples


def _dataset_roots(cfg: Config, run) -> list[Path]:
    if cfg.data.dataset:
        root = Path(cfg.data.dataset)
        if not (root / "meta" / "info.json").is_file():
            raise ConfigError(f"data.dataset: {root} is not a recorded dataset (no meta/info.json)")
        return [root]
    if int(cfg.data.episodes) < 1:
        raise ConfigError("data.episodes must be >= 1 (or give data.dataset)")
    return [record_demonstrations(cfg, run.dir / "demos")]


# -- the task adapter -----------------------------------------------------------------------------
class NavTask:
    """The navigation domain for :mod:`pixelrl.rl.text`: PointNav, ObjectNav, InstructNav."""

    RECIPES = {"embodied/vlm-sft": "sft", "embodied/vlm-grpo": "multiturn"}
    GROUPS_PER_STEP = "grpo.starts_per_step"  # multi-turn groups a step plays (split over ranks)

    def __init__(self, cfg: Config) -> None:
        if self.RECIPES.get(cfg.recipe) == "multiturn":  # the rewards of GRPO's episodes
            if cfg.grpo.reward not in REWARD_KINDS:
                raise ConfigError(
                    f"grpo.reward: {cfg.grpo.reward!r}; known: {', '.join(REWARD_KINDS)}"
                )
            unknown = set(cfg.grpo.rewards) - set(DEFAULTS["grpo"]["rewards"])
            if unknown:
                raise ConfigError(f"grpo.rewards: unknown terms {sorted(unknown)}")
        self.cfg, self.spec = cfg, agent_spec(cfg)
        check_model(cfg)
        self.train_envs: list = []  # multi-turn GRPO: G x starts_per_step envs, kept for the run
        self.failed: dict[int, None] = {}  # grpo.replay_failed: starts not yet solved, oldest first

    def codec(self):
        env = make_env(self.cfg, "train")
        try:
            return codec_for(self.spec, env)
        finally:
            env.close()

    def corpus(self) -> list[str]:
        """The codec's words, goal sentences and history lines, so that each is one token."""
        codec = self.codec()
        return (
            codec.corpus() * 20 + goal_corpus(self.spec.task, int(self.cfg.seed))
            + [f"Previous actions: {codec.render([a] * 3)}" for a in range(1, 4)] * 20
        )  # fmt: skip

    def evaluator(self):
        """Greedy episodes from ``eval.episodes`` held-out starts (``eval_kwargs``' scenes)."""
        from pixelrl.rl.text.adapter import Evaluation

        seeds = NAV_SEEDS.seeds("eval", int(self.cfg.eval.episodes))
        if not seeds:
            return Evaluation("success", None)
        envs = [make_env(self.cfg, "eval") for _ in range(max(1, min(8, len(seeds))))]
        return Evaluation("success", lambda policy: evaluate(policy, self.spec, envs, seeds))

    def validator(self):
        """Greedy episodes from ``eval.val_episodes`` starts in ``env.val_kwargs``' scenes:
        training-side apartments the run does not train on (never the held-out ones)."""
        from pixelrl.rl.text.adapter import Evaluation

        measure = str(self.cfg.eval.val_measure)
        seeds = NAV_SEEDS.seeds("val", int(self.cfg.eval.val_episodes))
        if not seeds:
            return Evaluation(measure, None)
        envs = [make_env(self.cfg, "val") for _ in range(max(1, min(8, len(seeds))))]
        return Evaluation(measure, lambda policy: evaluate(policy, self.spec, envs, seeds))

    def examples(self, run, policy) -> list[Example]:
        roots = _dataset_roots(self.cfg, run)
        weight = float(self.cfg.sft.inflection_weight)
        return sft_examples(roots, self.spec, policy.codec, weight)

    def save(self, policy, folder: Path) -> None:
        from pixelrl.embodied.vlm_agent import save_agent

        save_agent(policy, self.spec, folder)

    def play(self, policy, step: int, rng, gcfg) -> tuple[list[Episode], list[int]]:
        """``grpo.num_samples`` sampled episodes from each of ``grpo.starts_per_step`` starts."""
        G, P = gcfg.num_samples, int(self.cfg.grpo.starts_per_step)
        if not self.train_envs:
            self.train_envs = [make_env(self.cfg, "train") for _ in range(G * P)]
        starts = self._starts(rng, P)
        seeds = [s for s in starts for _ in range(G)]
        rewards = {k: float(v) for k, v in self.cfg.grpo.rewards.to_dict().items()}
        episodes = play(policy, self.spec, self.train_envs, seeds, sample=True,
                        temperature=gcfg.temperature, rewards=rewards,
                        reward_kind=str(self.cfg.grpo.reward), decay=float(self.cfg.grpo.decay))  # fmt: skip
        self._remember(starts, episodes, G)
        return episodes, seeds

    def _starts(self, rng, count: int) -> list[int]:
        """``count`` training starts: new ones, or with ``grpo.replay_failed``'s chance one whose
        last group did not all succeed."""
        replay = float(self.cfg.grpo.replay_failed)
        fresh = [int(s) for s in rng.integers(0, 2**31 - 1, count)]
        if not replay:
            return fresh  # (no more draws: the start stream of a run without replay is unchanged)
        pool = list(self.failed)
        return [
            int(pool[rng.integers(len(pool))]) if pool and rng.random() < replay else s
            for s in fresh
        ]

    def _remember(self, starts: list[int], episodes: list[Episode], G: int) -> None:
        """Keep the starts whose group did not all succeed for replay; forget solved ones."""
        if not float(self.cfg.grpo.replay_failed):
            return
        for i, start in enumerate(starts):
            self.failed.pop(start, None)
            if not all(ep.measures["success"] for ep in episodes[i * G : (i + 1) * G]):
                self.failed[start] = None  # (re-inserted: now the newest)
        while len(self.failed) > REPLAY_SIZE:
            self.failed.pop(next(iter(self.failed)))

    def state_dict(self) -> dict:
        """The replay pool, oldest first: a checkpoint keeps it, so a resumed run replays the
        same starts."""
        return {"failed": list(self.failed)}

    def load_state_dict(self, state: dict) -> None:
        self.failed = dict.fromkeys(int(s) for s in state["failed"])

    def step_row(self, episodes: list[Episode]) -> dict[str, float]:
        turns = [t for ep in episodes for t in ep.turns]
        return {
            "reward": float(np.mean([ep.ret for ep in episodes])),
            "success": float(np.mean([ep.measures["success"] for ep in episodes])),
            "spl": float(np.mean([ep.measures["spl"] for ep in episodes])),
            "format": float(np.mean([t.completion.parsed for t in turns])), "turns": len(turns),
        }  # fmt: skip

    def close(self) -> None:
        for env in self.train_envs:
            env.close()
        self.train_envs = []


def load_policy(cfg: Config, codec):
    """The VLMPolicy the config names, speaking ``codec``, with the task's tokenizer corpus."""
    from pixelrl.rl.text.policy import load_text_policy

    return load_text_policy(cfg, codec, NavTask(cfg).corpus)


def train(cfg: Config) -> dict[str, Any]:
    return text.train(cfg, NavTask(cfg))


# ``pixelrl train embodied/vlm-...``: config, ``--model``, the run, a summary table.
run_recipe = functools.partial(text.run_recipe, NavTask, config_for)
