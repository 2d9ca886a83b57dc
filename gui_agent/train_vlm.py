"""Training recipes for vision-language GUI policies: ``gui/sft``, ``gui/grounding-grpo``,
``gui/multiturn-grpo`` (``pixelrl train gui/... [key=value ...]``, ``--model NAME_OR_PATH``).

Every recipe loads a :class:`pixelrl.vision.vlm.VLMPolicy` (``model``: ``tiny-<family>``, a model folder
or a transformers name; ``init``: a folder saved by an earlier run, e.g. SFT before GRPO),
optionally wraps it with LoRA (``lora.enabled``), trains, evaluates on held-out seeds and writes
to ``train.output_dir``: ``model/`` (``save_pretrained`` of model and processor), ``history.csv``,
``eval.csv`` and ``learning_curve.png``.

- ``gui/sft``: behaviour cloning from recorded episodes (the recording format, :mod:`pixelrl.envs.recording`;
  ``data.dataset``, or, when empty, expert episodes of ``env.families`` recorded on the spot into
  ``<output_dir>/demos``). Loss: mean negative log-likelihood of the action text's tokens (the
  end token included) given the screenshot, instruction and previous actions.
- ``gui/grounding-grpo``: one-step grounding. Prompts are (screenshot, instruction) pairs from
  training seeds (:func:`pixelrl.gui_agent.grounding.grounding_set` with ``split="train"``); ``G =
  grpo.num_samples`` completions each; reward ``grpo.reward`` (:data:`GROUNDING_REWARDS`);
  group-normalised advantages, the clipped token-level surrogate, optional k3 KL to the frozen
  start (``grpo.kl_coef``). Unparsable text scores 0 format reward and trains like any sample.
- ``gui/multiturn-grpo``: groups of ``G`` episodes played from the same seed (sampled actions;
  unparsable text is a ``wait``), the env's (shaped) rewards per step; advantages are episode-level
  plus GiGPO step-level from anchor states (:func:`pixelrl.rl.grpo.gigpo_advantages`).

Evaluation: grounding accuracy (ScreenSpot) on the held-out grounding set for the one-step
recipes, task success on held-out seeds for the multi-turn one (``eval.*``).

MiniWoB++ (issue 26's second recipe): ``env.tasks`` names MiniWoB++ tasks instead of desktop
families (``env.id`` and ``env.families`` are then unused, ``env.kwargs`` holds the MiniWoB env's
options). ``gui/sft`` clones the MiniWoB++ oracle's episodes of every task (or ``data.dataset``,
e.g. the ``gui/miniwob`` recipe's ``policy.bc_demos`` folder), ``gui/multiturn-grpo`` plays its
groups on the tasks in turn, and success is evaluated per task on held-out seeds
(``gui_agent/configs/miniwob_vlm_sft.yaml``, ``miniwob_vlm_grpo.yaml``).

The recipes are a task adapter (:class:`GUITask`) of the one text-policy trainer
(:mod:`pixelrl.rl.text`): this module says what a GUI prompt, demonstration, reward, episode and
held-out evaluation are; the loops are the trainer's.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError, load_config
from pixelrl.rl.text import recipe as text
from pixelrl.rl.text.config import check_text_config, text_defaults
from pixelrl.rl.text.rollout import TurnResult, play_episodes
from pixelrl.rl.text.rows import Example, Prompt

DEFAULTS: dict[str, Any] = text_defaults({
    "model": "tiny-qwen2_vl",
    # tiny-<family>: how many training screens per family of env.families whose instructions
    # and element names join the tokenizer's corpus (a label is then one token, not byte
    # pieces); 0 screens: the generic action corpus only
    "tokenizer": {"vocab_size": 600, "screens": 0},
    "action_format": "uitars",
    # how action text's numbers map to pixels (pixelrl.envs.gui_action.coordinates: relative1000,
    # smart_resize:ui-tars-1.5, ...); "": the released model's own when known, else the defaults
    "coordinates": "",
    "env": {
        "id": "pixelrl/Desktop-ClickButton-v0",
        "families": ["click-button"],
        "screen_size": [320, 240],
        "max_steps": 0,  # 0: the env's default
        "reward": "shaped",
        "max_fields": 0,  # fill-form: only layouts with at most this many fields (0: any)
        # MiniWoB++ task names: the recipe runs on pixelrl/MiniWoB-<task>-v0 instead of env.id /
        # env.families, with env.kwargs as their options (screen_size and reward do not apply)
        "tasks": [],
        "kwargs": {},
    },
    "data": {
        "dataset": "",  # gui/sft: recorded episodes; "" records data.episodes expert ones (0: none)
        "episodes": 200,
        "prompts": 400,  # gui/grounding-grpo: training prompts
        # gui/sft: + a click on every uniquely named element of this many training screens per
        # family (pixelrl.envs.grounding.grounding_samples)
        "grounding_screens": 0,
    },
    "grpo": {
        "prompts_per_step": 4,
        "max_new_tokens": 24,
        "reward": "click_gaussian",
        "sigma_scale": 0.5,  # the Gaussian's σ in box sizes (click_gaussian, gui_g2)
        "seeds_per_step": 2,
    },
    "eval": {"interval": 10, "grounding_items": 100, "episodes": 20},
    # Set-of-Mark prompts: the screen reader's words, numbered, each with its centre in the
    # action text's coordinates, under the instruction (pixelrl.vision.reader.SetOfMarks; needs
    # the reader extra); at most screen_words of them
    "prompt": {"screen_parse": False, "screen_words": 40},
    # Where envs run. sync: in this process; ray: in Ray actors (pixelrl.envs.remote), per_worker
    # each. gui/multiturn-grpo: a group's envs (num_samples / per_worker workers), kept for the
    # run; an episode whose worker fails leaves its group. gui/sft: the expert's episodes are
    # recorded from num_workers workers (0: 2) into the one dataset; one a fault cut is redone
    "envs": {
        "backend": "sync",
        "num_workers": 0,
        "per_worker": 1,
        "step_timeout": 60.0,
        "max_failures": 3,
        "address": "",
        "num_cpus": 0,
        "resources_per_worker": {},
    },
})  # fmt: skip


# -- rewards ------------------------------------------------------------------------------------
def click_gaussian_reward(texts, boxes, screen_size, sigma_scale: float = 0.5) -> np.ndarray:
    """``r = R_in_box + R_gauss + 0.5 · R_format`` ∈ [0, 2.5]: click-in-box, the GUI-G² Gaussian
    point reward (σ = ``sigma_scale`` × box size; ½ in GUI-G², larger gives a denser signal to a
    model that rarely lands near the box yet) and the format reward, all from
    :mod:`pixelrl.vision.rewards`."""
    from pixelrl.vision.rewards import (
        format_reward,
        gaussian_point_reward,
        parse_points,
        point_in_box,
    )

    points = parse_points(texts, screen_size)
    return (
        point_in_box(points, boxes)
        + gaussian_point_reward(points, boxes, sigma_scale)
        + 0.5 * format_reward(texts, screen_size)
    )


def _recipe(name: str):
    def fn(texts, boxes, screen_size, sigma_scale: float = 0.5):
        import pixelrl.vision.rewards as R

        extra = {"sigma_scale": sigma_scale} if name == "gui_g2_reward" else {}
        return getattr(R, name)(texts, boxes, screen_size=screen_size, **extra)

    return fn


GROUNDING_REWARDS = {
    "click_gaussian": click_gaussian_reward,
    "ui_r1": _recipe("ui_r1_reward"),
    "gui_r1": _recipe("gui_r1_reward"),
    "se_gui": _recipe("se_gui_reward"),
    "gui_g2": _recipe("gui_g2_reward"),
}


# -- set-up -------------------------------------------------------------------------------------
def config_for(recipe_config: str | Path, overrides=()) -> Config:
    cfg = load_config(recipe_config, list(overrides), DEFAULTS)
    check_text_config(cfg)
    if int(cfg.prompt.screen_words) < 1:
        raise ConfigError(f"prompt.screen_words must be >= 1, got {cfg.prompt.screen_words}")
    if cfg.env.tasks:
        task_envs(cfg)  # an unknown MiniWoB++ task is a ConfigError before any run folder
    return cfg


def gui_codec(cfg: Config, source: str):
    """The GUI action codec of ``action_format`` and ``coordinates`` (or the model's own)."""
    from pixelrl.envs.gui_action.codec import GUIActionCodec

    try:
        return GUIActionCodec.for_model(source, cfg.action_format, cfg.coordinates or None)
    except ValueError as e:
        key = "coordinates" if cfg.coordinates else "action_format"
        raise ConfigError(f"{key}: {e}") from None


def load_policy(cfg: Config):
    """The :class:`VLMPolicy` a config names, with the GUI codec (:class:`GUITask`'s)."""
    from pixelrl.rl.text.policy import load_text_policy

    task = GUITask(cfg)
    return load_text_policy(cfg, task.codec(), task.corpus)


def _screen(cfg: Config) -> tuple[int, int]:
    return tuple(int(v) for v in cfg.env.screen_size)


def _env_kwargs(cfg: Config) -> dict[str, Any]:
    if cfg.env.tasks:  # MiniWoB++: its own options; the screen is the task's
        kwargs = cfg.env.kwargs.to_dict() if hasattr(cfg.env.kwargs, "to_dict") else {}
    else:
        kwargs = {"screen_size": _screen(cfg), "reward": cfg.env.reward}
    if int(cfg.env.max_steps):
        kwargs["max_steps"] = int(cfg.env.max_steps)
    return kwargs


def task_envs(cfg: Config) -> list[tuple[str, str]]:
    """(name, env id) of each task the recipe plays: ``env.tasks`` (MiniWoB++, checked against
    the registry) or the desktop's ``env.families``."""
    if cfg.env.tasks:
        from pixelrl.gui_agent.miniwob_task import env_id, tasks_of

        return [(task, env_id(task)) for task in tasks_of(cfg)]
    from pixelrl.envs.desktop.registration import env_id

    return [(family, env_id(family)) for family in cfg.env.families]


def _play_ids(cfg: Config) -> list[str]:
    """The env ids episodes are played on: each of ``env.tasks``, else ``env.id``."""
    return [eid for _, eid in task_envs(cfg)] if cfg.env.tasks else [str(cfg.env.id)]


def task_seeds(
    cfg: Config, env_id: str, split: str, count: int, rng=None, start: int = 0
) -> list[int]:
    """``count`` seeds of ``split`` (even: train, odd: eval) for ``env_id``: random ones from
    ``rng`` (counting up from the even ``start`` without it), keeping only layouts that
    ``env.max_fields`` allows — an easier fill-form (fewer fields) with the same train/eval
    split of seeds."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    parity = {"train": 0, "eval": 1}[split]
    limit = int(cfg.env.max_fields)
    probe = gym.make(env_id, **_env_kwargs(cfg)) if limit else None
    seeds: list[int] = []
    k = 0
    while len(seeds) < count:
        if probe is not None and k >= 200 * count and not seeds:  # no layout is that small
            probe.close()
            raise ConfigError(
                f"env.max_fields={limit}: no {env_id} layout in {k} seeds has so few fields"
            )
        seed = 2 * (int(rng.integers(0, 2**30)) if rng is not None else k) + parity + start
        k += 1
        if probe is not None:
            fields = probe.reset(seed=seed)[1]["task"].get("fields", {})
            if len(fields) > limit:
                continue
        seeds.append(seed)
    if probe is not None:
        probe.close()
    return seeds


def training_screens(cfg: Config, per_family: int):
    """``(family, obs, info)`` of the first screen of ``per_family`` training seeds of each of
    ``env.families`` — the seeds :func:`record_expert_episodes` starts from, continued."""
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    for fi, (family, eid) in enumerate(task_envs(cfg)):
        env = gym.make(eid, **_env_kwargs(cfg))
        for seed in task_seeds(cfg, eid, "train", per_family, start=20_000 * fi):
            obs, info = env.reset(seed=seed)
            yield family, obs, info
        env.close()


def _grounding_eval(policy, cfg: Config, items) -> dict[str, float]:
    from pixelrl.gui_agent.agents import VLMAgent
    from pixelrl.gui_agent.evaluate import evaluate_grounding

    was_training = policy.model.training
    rows = evaluate_grounding(VLMAgent(policy, int(cfg.grpo.max_new_tokens)), items, progress=False)
    policy.model.train(was_training)
    overall = rows[-1]
    per_family = {r["family"]: r["accuracy"] for r in rows[:-1]} if len(rows) > 1 else {}
    return {**{k: overall[k] for k in ("accuracy", "ci_low", "ci_high", "n")}, **per_family}


def _success_eval(policy, cfg: Config) -> dict[str, float]:
    from pixelrl.gui_agent.agents import VLMAgent
    from pixelrl.gui_agent.evaluate import evaluate_success
    from pixelrl.stats import wilson_interval

    was_training = policy.model.training
    agent = VLMAgent(policy, int(cfg.grpo.max_new_tokens))
    out, successes, returns = {}, [], []
    for name, eid in task_envs(cfg) if cfg.env.tasks else [("", str(cfg.env.id))]:
        seeds = None
        if int(cfg.env.max_fields):
            rng = np.random.default_rng(int(cfg.seed))
            seeds = task_seeds(cfg, eid, "eval", int(cfg.eval.episodes), rng)
        overall = evaluate_success(
            agent, eid, int(cfg.eval.episodes), int(cfg.seed), _env_kwargs(cfg),
            progress=False, seeds=seeds,
        )[-1]  # fmt: skip
        if name:  # several tasks: each one's rate, then all episodes pooled
            out[name] = overall["success"]
        successes += [overall["success"]] * int(overall["n"])
        returns += [overall["return"]] * int(overall["n"])
    policy.model.train(was_training)
    n = len(successes)
    low, high = wilson_interval(round(sum(successes)), n)
    return {"success": float(np.mean(successes)), "ci_low": low, "ci_high": high,
            "return": float(np.mean(returns)), "n": n, **out}  # fmt: skip


def _held_out(cfg: Config):
    """The held-out grounding set for one-step recipes (None for the multi-turn one)."""
    if cfg.recipe == "gui/multiturn-grpo" or not int(cfg.eval.grounding_items) or cfg.env.tasks:
        return None  # MiniWoB++ (env.tasks): task success; the grounding set is the desktop's
    from pixelrl.gui_agent.grounding import grounding_set

    return grounding_set(int(cfg.eval.grounding_items), tuple(cfg.env.families), _screen(cfg))


# -- SFT ----------------------------------------------------------------------------------------
def record_expert_episodes(cfg: Config, root: Path) -> Path:
    """Record ``data.episodes`` expert episodes of ``env.families`` (training seeds) into ``root``."""
    import gymnasium as gym
    from tqdm import tqdm

    import pixelrl.envs  # noqa: F401
    from pixelrl.envs.recording import RecordEpisodes

    tasks = task_envs(cfg)
    per_family = -(-int(cfg.data.episodes) // len(tasks))
    for fi, (family, eid) in enumerate(tasks):
        # even seeds (training), from 20,000·fi up, that env.max_fields allows
        seeds = task_seeds(cfg, eid, "train", per_family, start=20_000 * fi)
        if cfg.envs.backend == "ray":
            _record_expert_on_ray(cfg, eid, seeds, root / family)
            continue
        env = RecordEpisodes(gym.make(eid, **_env_kwargs(cfg)), root / family)
        for seed in tqdm(seeds, desc=f"expert {family}", disable=not cfg.train.progress):
            obs, info = env.reset(seed=seed)
            done = False
            while not done:
                obs, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
                done = terminated or truncated
        env.close()
    return root


def _record_expert_on_ray(cfg: Config, env_id: str, seeds: list[int], root: Path) -> None:
    """The expert's episodes of ``seeds`` played in ``envs.num_workers`` Ray workers (0: 2) and
    recorded here into the one dataset at ``root`` (:mod:`pixelrl.envs.recording.remote`)."""
    from tqdm import tqdm

    from pixelrl.envs.recording.remote import expert_actions, record_in_ray
    from pixelrl.rl.vector_envs import ray_options

    opts = cfg.envs
    with tqdm(
        total=len(seeds), desc=f"expert {root.name} (ray)", disable=not cfg.train.progress
    ) as bar:
        record_in_ray(
            env_id,
            _env_kwargs(cfg),
            seeds,
            root,
            expert_actions,
            num_workers=int(opts.num_workers) or 2,
            per_worker=int(opts.per_worker),
            progress=lambda k: bar.update(k - bar.n),
            **ray_options(opts),
        )


def sft_examples(roots: list[Path], policy) -> list[Example]:
    """Every step of the recorded episodes: (screenshot, instruction, history) -> action text."""
    from pixelrl.envs.recording import EpisodeDataset
    from pixelrl.envs.recording.codec import action_as_gui

    examples = []
    for root in roots:
        data = EpisodeDataset(root)
        screen = data.screen_size
        for e in data.episodes:
            rows = data.steps(e)
            history: list[str] = []
            for t, text_ in enumerate(rows["action"]):
                action = action_as_gui(str(text_), screen)
                if action is None:
                    continue
                target = policy.action_text(action, screen)
                instruction = str(rows["instruction"].iloc[t])
                examples.append(
                    Example(Prompt(data.frame(e, t), instruction, tuple(history)), target)
                )
                history.append(target)
    if not examples:
        raise ValueError(f"no usable steps in {[str(r) for r in roots]}")
    return examples


def grounding_examples(cfg: Config, policy) -> list[Example]:
    """SFT examples that point at every uniquely named element (``Click the "Stop" button.``) of
    ``data.grounding_screens`` training screens per family: many instructions per screen, so
    the model must read the instruction to know where to click."""
    from pixelrl.envs.grounding import grounding_samples
    from pixelrl.envs.gui import bbox_center
    from pixelrl.envs.gui_action import Action

    screen = _screen(cfg)
    examples = []
    for _, obs, info in training_screens(cfg, int(cfg.data.grounding_screens)):
        for sample in grounding_samples(info["a11y"], screen):
            target = policy.action_text(Action.click(*bbox_center(sample.bbox)), screen)
            examples.append(Example(Prompt(obs["screenshot"], sample.instruction), target))
    return examples


def _dataset_roots(cfg: Config, run) -> list[Path]:
    if cfg.data.dataset:
        root = Path(cfg.data.dataset)
        if not root.exists():
            raise ConfigError(f"data.dataset: no such folder {root}")
        subs = [p for p in sorted(root.iterdir()) if (p / "meta" / "info.json").is_file()]
        return subs or [root]
    if not int(cfg.data.episodes):  # grounding samples only (data.grounding_screens)
        return []
    record_expert_episodes(cfg, run.dir / "demos")
    return [run.dir / "demos" / name for name, _ in task_envs(cfg)]


# -- multi-turn episodes ------------------------------------------------------------------------
class LocalGroup:
    """``envs`` (in this process) all reset with ``seed``: the env group of
    :func:`pixelrl.rl.text.rollout.play_episodes`. A refused action is played as a ``wait``."""

    def __init__(self, policy, envs: list, seed: int, max_new_tokens: int) -> None:
        self.policy, self.envs, self.n = policy, envs, len(envs)
        self.screen = tuple(envs[0].unwrapped.screen_size)
        self.max_new_tokens = max_new_tokens
        self.obs = [e.reset(seed=seed)[0] for e in envs]
        self.histories: list[list[str]] = [[] for _ in envs]

    def prompts(self, active: list[int]) -> list[Prompt]:
        return [Prompt(self.obs[i]["screenshot"], self.obs[i]["instruction"],
                       tuple(self.histories[i])) for i in active]  # fmt: skip

    def _played(self, i: int, action, result) -> TurnResult:
        obs, reward, terminated, truncated, info = result
        self.histories[i].append(self.policy.action_text(action, self.screen))
        self.obs[i] = obs
        done = bool(terminated or truncated)
        return TurnResult(float(reward), done, bool(info.get("success", False)))

    def step(self, completions: dict) -> dict[int, TurnResult | None]:
        from pixelrl.envs.gui_action import Action, ActionError

        out: dict[int, TurnResult | None] = {}
        for i, completion in completions.items():
            action = completion.action  # unparsable text -> wait (parsed False)
            try:
                result = self.envs[i].step(action)
            except ActionError:
                action = Action.wait()
                result = self.envs[i].step(action)
            out[i] = self._played(i, action, result)
        return out


class RayGroup(LocalGroup):
    """The same group in a ``RayVectorEnv`` (:func:`group_envs`): every env stepped each turn
    (an episode already over plays ``wait`` in its next one, and is not recorded); an env whose
    worker failed (``info["env_fault"]``) drops out."""

    def __init__(self, policy, envs, seed: int, max_new_tokens: int) -> None:
        from pixelrl.envs.recording.wrapper import item_at

        self.policy, self.vector, self.n = policy, envs, envs.num_envs
        self.screen = tuple(envs.get_attr("screen_size")[0])
        self.max_new_tokens = max_new_tokens
        batch, _ = envs.reset(seed=[seed] * self.n)
        self.obs = [item_at(batch, i) for i in range(self.n)]
        self.histories = [[] for _ in range(self.n)]

    def step(self, completions: dict) -> dict[int, TurnResult | None]:
        from pixelrl.envs.gui_action import Action
        from pixelrl.envs.recording.wrapper import info_at, item_at

        actions = [Action.wait()] * self.n
        for i, completion in completions.items():
            actions[i] = completion.action  # unparsable text -> wait (parsed False)
        batch, rewards, terminated, truncated, infos = self.vector.step(actions)
        out: dict[int, TurnResult | None] = {}
        for i in completions:
            info = info_at(infos, i)
            info = info.get("final_info", info)  # at an episode's end: its last step's
            if info.get("env_fault"):
                out[i] = None
                continue
            action = Action.wait() if "action_error" in info else actions[i]
            result = (item_at(batch, i), rewards[i], terminated[i], truncated[i], info)
            out[i] = self._played(i, action, result)
        return out


def play_group(policy, cfg: Config, seed: int, group_size: int, gcfg, env_id: str | None = None,
               envs=None) -> list:  # fmt: skip
    """``group_size`` episodes of ``env_id`` (default ``env.id``) from the same seed, sampled
    and played together (:func:`pixelrl.rl.text.rollout.play_episodes`). ``envs``: a
    ``RayVectorEnv`` of ``group_size`` such envs (:func:`group_envs`) instead of envs made here;
    an episode whose worker failed is left out."""
    if envs is not None:
        group = RayGroup(policy, envs, seed, gcfg.max_new_tokens)
        return play_episodes(policy, group, sample=True, temperature=gcfg.temperature)
    import gymnasium as gym

    import pixelrl.envs  # noqa: F401

    env_list = [gym.make(env_id or cfg.env.id, **_env_kwargs(cfg)) for _ in range(group_size)]
    try:
        group = LocalGroup(policy, env_list, seed, gcfg.max_new_tokens)
        return play_episodes(policy, group, sample=True, temperature=gcfg.temperature)
    finally:
        for e in env_list:
            e.close()


def _check_envs(cfg: Config, group_size: int | None = None) -> None:
    """``envs`` settings no run can use, before any run folder or model exists."""
    if cfg.envs.backend not in ("sync", "ray"):
        raise ConfigError(f"envs.backend must be sync or ray, got {cfg.envs.backend!r}")
    per_worker = int(cfg.envs.per_worker)
    if per_worker < 1 or int(cfg.envs.num_workers) < 0:
        raise ConfigError("envs.per_worker must be >= 1 and envs.num_workers >= 0")
    if cfg.envs.backend == "ray" and group_size and group_size % per_worker:
        raise ConfigError(
            f"envs.per_worker={per_worker} must divide grpo.num_samples={group_size} "
            "(a group's envs fill whole workers)"
        )


def group_envs(cfg: Config, env_id: str, group_size: int):
    """``group_size`` envs of ``env_id`` in Ray actors (``envs.per_worker`` each), for
    :func:`play_group`; a refused action is played as a ``wait``, as in this process."""
    from pixelrl.envs.gui_action import Action
    from pixelrl.envs.remote import RayVectorEnv
    from pixelrl.rl.vector_envs import ray_options

    _check_envs(cfg, group_size)
    per_worker = int(cfg.envs.per_worker)
    return RayVectorEnv(
        env_id,
        group_size // per_worker,
        per_worker,
        kwargs=_env_kwargs(cfg),
        min_envs=group_size,  # a group is all of them
        refused_action=Action.wait(),
        **ray_options(cfg.envs),
    )


# -- the task adapter ---------------------------------------------------------------------------
class GUITask:
    """The GUI domain for :mod:`pixelrl.rl.text`: desktop families or MiniWoB++ tasks."""

    RECIPES = {"gui/sft": "sft", "gui/grounding-grpo": "grpo", "gui/multiturn-grpo": "multiturn"}
    GROUPS_PER_STEP = "grpo.seeds_per_step"  # multi-turn groups a step plays (split over ranks)

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        group = int(cfg.grpo.num_samples) if cfg.recipe == "gui/multiturn-grpo" else None
        _check_envs(cfg, group)  # before any run folder or model
        if cfg.recipe == "gui/grounding-grpo" and cfg.grpo.reward not in GROUNDING_REWARDS:
            raise ConfigError(
                f"grpo.reward: {cfg.grpo.reward!r}; known: {', '.join(GROUNDING_REWARDS)}"
            )
        self.pools: dict[str, Any] = {}  # envs.backend=ray: each task's group, kept for the run

    def codec(self):
        return gui_codec(self.cfg, str(self.cfg.init or self.cfg.model))

    def corpus(self) -> list[str] | None:
        """With ``tokenizer.screens``: the codec's corpus and the words of training screens."""
        if not int(self.cfg.tokenizer.screens):
            return None
        from pixelrl.vision.vlm import tiny_corpus

        screens = training_screens(self.cfg, int(self.cfg.tokenizer.screens))
        texts = [t for _, obs, info in screens
                 for t in [obs["instruction"], *(e.get("name", "") for e in info["a11y"])]]  # fmt: skip
        if self.cfg.prompt.screen_parse:  # the parse's own words and marks, each one token
            texts += [" ".join(["Screen text:", *(f"[{i}]" for i in range(1, 41))])] * 20
        return tiny_corpus(self.codec(), int(self.cfg.seed)) + texts

    def evaluator(self):
        from pixelrl.rl.text.adapter import Evaluation

        items = _held_out(self.cfg)
        if items is None:
            return Evaluation("success", lambda policy: _success_eval(policy, self.cfg))
        return Evaluation("accuracy", lambda policy: _grounding_eval(policy, self.cfg, items))

    def validator(self):
        """None yet: GUI runs keep their last model (no validation set)."""
        from pixelrl.rl.text.adapter import Evaluation

        return Evaluation("success", None)

    def examples(self, run, policy) -> list[Example]:
        roots = _dataset_roots(self.cfg, run)
        examples = sft_examples(roots, policy) if roots else []
        if int(self.cfg.data.grounding_screens):
            examples += grounding_examples(self.cfg, policy)
        if not examples:
            raise ConfigError(
                "gui/sft has nothing to learn from: data.episodes and data.grounding_screens are 0"
            )
        return examples

    def save(self, policy, folder: Path) -> None:
        policy.save(folder)

    # one-step GRPO: grounding prompts, click rewards
    def prompts(self) -> list:
        from pixelrl.gui_agent.grounding import grounding_set

        cfg = self.cfg
        return grounding_set(int(cfg.data.prompts), tuple(cfg.env.families), _screen(cfg),
                             split="train")  # fmt: skip

    def prompt(self, item) -> Prompt:
        return Prompt(item.screenshot, item.instruction)

    def rewards(self, item, texts: list[str]):
        fn, sigma = GROUNDING_REWARDS[str(self.cfg.grpo.reward)], float(self.cfg.grpo.sigma_scale)
        return fn(texts, [item.bbox] * len(texts), _screen(self.cfg), sigma)

    # multi-turn GRPO: groups of episodes from training seeds, the tasks in turn
    def play(self, policy, step: int, rng, gcfg) -> tuple[list, list]:
        episodes, groups = [], []
        ids, per_step = _play_ids(self.cfg), int(self.cfg.grpo.seeds_per_step)
        for k in range(per_step):
            eid = ids[(step * per_step + k) % len(ids)]
            seed = task_seeds(self.cfg, eid, "train", 1, rng)[0]
            envs = None
            if self.cfg.envs.backend == "ray":
                if eid not in self.pools:
                    self.pools[eid] = group_envs(self.cfg, eid, gcfg.num_samples)
                envs = self.pools[eid]
            played = play_group(policy, self.cfg, seed, gcfg.num_samples, gcfg, eid, envs)
            episodes += played
            groups += [(eid, seed)] * len(played)
        return episodes, groups

    def step_row(self, episodes: list) -> dict[str, float]:
        turns = [t for ep in episodes for t in ep.turns]
        row = {"reward": float(np.mean([ep.ret for ep in episodes])),
               "success": float(np.mean([ep.success for ep in episodes])),
               "format": float(np.mean([t.completion.parsed for t in turns])), "steps": len(turns)}  # fmt: skip
        if self.pools:  # worker faults so far, counted since the start
            row["env_faults"] = sum(e.faults for e in self.pools.values())
        return row

    def close(self) -> None:
        for envs in self.pools.values():
            envs.close()
        self.pools = {}


def grounding_grpo_step(policy, opt, lr: float, ref, prompts, gcfg, reward_fn, screen,
                        sigma_scale: float, minibatch: int) -> dict[str, float]:  # fmt: skip
    """One step of ``gui/grounding-grpo`` on ``prompts`` (``GroundingItem``\\ s): the trainer's
    :func:`pixelrl.rl.text.grpo.one_step`, which ``bench/grpo_vs_trl.py`` times against TRL's
    ``GRPOTrainer``."""
    from pixelrl.rl.text.grpo import one_step

    return one_step(
        policy, opt, lr, ref, [Prompt(p.screenshot, p.instruction) for p in prompts],
        lambda i, texts: reward_fn(texts, [prompts[i].bbox] * len(texts), screen, sigma_scale),
        gcfg, minibatch,
    )  # fmt: skip


def train(cfg: Config) -> dict[str, Any]:
    """Run the recipe ``cfg.recipe`` names."""
    return text.train(cfg, GUITask(cfg))


run_sft = train  # gui/sft's config in, its run out (bench/grpo_vs_trl.py)

# ``pixelrl train gui/...``: config, ``--model``, the run, a summary table.
run_recipe = functools.partial(text.run_recipe, GUITask, config_for)
