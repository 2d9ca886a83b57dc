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
reports Success with its 95% interval, SPL and the share of parsed answers. The run folder holds
``model/`` (:func:`~pixelrl.embodied.vlm_agent.save_agent`: weights, processor and the agent's
json, what ``pixelrl bench nav --agent vlm RUN/model`` loads), ``history.csv``, ``eval.csv``
and ``learning_curve.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from pixelrl.config import Config, ConfigError, check_ranges, load_config
from pixelrl.embodied.vlm_agent import TASKS, AgentSpec, NavPrompt, VLMNavAgent, goal_text
from pixelrl.envs.nav.tasks import IDLE, IDLE_INDEX
from pixelrl.rl.grpo import RECIPE_DEFAULTS as GRPO_DEFAULTS
from pixelrl.run_folder import Run, recipe_config
from pixelrl.stats import wilson_interval

DEFAULTS: dict[str, Any] = {
    "recipe": "",
    "seed": 1,
    "device": "cpu",
    "torch_threads": 0,
    "model": "tiny-smolvlm",
    "dtype": None,
    "text_size": {},  # tiny-<family>: the language model's shape (pixelrl.vision.tiny_vlm.build_tiny_vlm)
    "vision_size": {},  # tiny-<family> but llava: the vision side
    "tokenizer": {"vocab_size": 800},  # tiny-<family>: BPE over the codec's and goals' words
    "init": "",  # a model folder to start from (an embodied/vlm-sft run's model/)
    "lora": {"enabled": False, "r": 16, "alpha": 32, "dropout": 0.0},
    "env": {
        "id": "pixelrl/PointNav-v0",
        "kwargs": {},  # pixelrl.envs.nav options (NavConfig), checked key by key
        "eval_kwargs": {},  # on top of kwargs for held-out episodes (another scene_seed)
    },
    "agent": {"max_repeat": 4, "max_steps": 8, "max_new_tokens": 16},
    "prompt": {"depth": False, "memory_frames": 0, "history_steps": 8},
    "data": {"dataset": "", "episodes": 200},
    # inflection_weight: how much more often a step where the follower's action changes (every
    # stop, every turn onto a new heading) is drawn than the rest (VLN-CE's inflection weighting)
    "sft": {
        "steps": 500,
        "batch_size": 16,
        "lr": 1e-3,
        "weight_decay": 0.0,
        "inflection_weight": 1.0,
    },
    "grpo": {
        **GRPO_DEFAULTS,
        "num_samples": 4,  # G: episodes per start
        "starts_per_step": 2,
        "reward": "measures",  # or "time_decayed" (VLN-R1)
        "rewards": {"progress": 1.0, "slack": -0.01, "success": 2.5, "spl": 1.0, "format": 0.1},
        "decay": 0.8,  # time_decayed: weight of the answer's i-th step is decay**i
    },
    "eval": {"interval": 10, "episodes": 40},
    "train": {"output_dir": "", "progress": True},
}
REWARD_KINDS = ("measures", "time_decayed")


# -- set-up -------------------------------------------------------------------------------------
POSITIVE = (
    "sft.steps", "sft.batch_size", "sft.lr", "grpo.num_samples", "grpo.starts_per_step",
    "grpo.steps", "grpo.lr", "grpo.minibatch", "agent.max_repeat", "agent.max_steps",
    "agent.max_new_tokens",
)  # fmt: skip
NON_NEGATIVE = ("sft.inflection_weight", "data.episodes", "eval.episodes", "eval.interval", "prompt.memory_frames",
                "prompt.history_steps")  # fmt: skip


def config_for(recipe_config: str | Path, overrides=()) -> Config:
    """The recipe's config with ``overrides``; values no run can use are a :class:`ConfigError`
    here, before any work."""
    cfg = load_config(recipe_config, list(overrides), DEFAULTS)
    check_ranges(cfg, POSITIVE, NON_NEGATIVE)
    task_of(cfg)
    return cfg


def env_kwargs(cfg: Config, split: str) -> dict[str, Any]:
    """The env options of ``split`` (checked against NavConfig; eval adds ``eval_kwargs``)."""
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


def load_policy(cfg: Config, codec, extra_corpus: list[str] = ()):
    """The VLMPolicy the config names (``init`` folder first, else ``model``), with LoRA."""
    import torch

    from pixelrl.vision.vlm import load_vlm

    torch.manual_seed(int(cfg.seed))
    source = str(cfg.init or cfg.model)
    extra: dict[str, Any] = {}
    if source.startswith("tiny-"):
        for key in ("text_size", "vision_size"):
            if getattr(cfg, key):
                extra[key] = getattr(cfg, key).to_dict()
        extra["vocab_size"] = int(cfg.tokenizer.vocab_size)
        task = task_of(cfg)
        extra["corpus"] = (
            codec.corpus() * 20 + goal_corpus(task, int(cfg.seed)) + list(extra_corpus)
            + [f"Previous actions: {codec.render([a] * 3)}" for a in range(1, 4)] * 20
        )  # fmt: skip
    policy = load_vlm(source, dtype=cfg.dtype, device=cfg.device, seed=int(cfg.seed), codec=codec,
                      **extra)  # fmt: skip
    if cfg.lora.enabled:
        policy.add_lora(
            r=int(cfg.lora.r), alpha=int(cfg.lora.alpha), dropout=float(cfg.lora.dropout)
        )
    return policy


# -- playing episodes -----------------------------------------------------------------------------
def play(policy, spec: AgentSpec, envs: list, seeds: list[int], sample: bool, temperature: float = 1.0,
         rewards: dict[str, float] | None = None, reward_kind: str = "measures", decay: float = 0.8,
         ) -> list[dict[str, Any]]:  # fmt: skip
    """One episode in each env (``envs[i].reset(seed=seeds[i])``), all played together: one
    batched ``generate`` per turn for every env still running. Returns per episode its
    ``turns`` (prompt, completion, the turn's reward, anchor key) and final ``measures``.

    A parsed answer's low-level steps run in order until the episode ends; an unparsable one
    runs nothing (``IDLE``: one step of the budget)."""
    from pixelrl.rl.grpo import anchor_key

    rewards = rewards or DEFAULTS["grpo"]["rewards"]
    agents = [VLMNavAgent(policy, spec, deterministic=not sample, temperature=temperature)
              for _ in envs]  # fmt: skip
    obs, infos = (list(x) for x in zip(*[env.reset(seed=s) for env, s in zip(envs, seeds)]))
    followers = [env.unwrapped.shortest_path_follower() for env in envs]
    episodes: list[dict[str, Any]] = [{"turns": [], "measures": {}} for _ in envs]
    for agent, first in zip(agents, obs):
        agent.frames.append(first)
    active = list(range(len(envs)))
    while active:
        prompts = [agents[i].prompt() for i in active]
        completions = agents[0].generate([agents[i] for i in active])
        still = []
        for i, prompt, completion in zip(active, prompts, completions):
            env, state = envs[i], envs[i].unwrapped.state
            before, steps, matches, done = infos[i]["distance_to_goal"], 0, [], False
            if not completion.parsed:  # nothing is executed; the turn still costs a step
                obs[i], _, terminated, truncated, infos[i] = env.step(IDLE)
                steps, done = 1, terminated or truncated
            else:
                for action in completion.action:
                    expert = followers[i].get_next_action(state.position, state.yaw)
                    matches.append(action == expert)
                    obs[i], _, terminated, truncated, infos[i] = env.step(action)
                    agents[i].executed.append(action)
                    agents[i].frames.append(obs[i])
                    steps, done = steps + 1, terminated or truncated
                    if done:
                        break
            after = infos[i]["distance_to_goal"]
            if (
                reward_kind == "time_decayed"
            ):  # VLN-R1: the answer's steps that agree with the expert
                weights = decay ** np.arange(len(matches))
                reward = float(np.dot(weights, matches) / weights.sum()) if matches else 0.0
            else:
                reward = rewards["slack"] * steps - rewards["format"] * (not completion.parsed)
                if np.isfinite(before) and np.isfinite(after):
                    reward += rewards["progress"] * (before - after)
            if done:
                reward += rewards["success"] * infos[i]["success"]
                if reward_kind == "measures":
                    reward += rewards["spl"] * infos[i]["spl"]
                episodes[i]["measures"] = {k: float(infos[i][k]) for k in MEASURES}
            image, instruction, history = prompt
            episodes[i]["turns"].append({
                "screenshot": image, "instruction": instruction, "history": history,
                "completion": completion, "reward": float(reward),
                "key": anchor_key({"image": image, "goal": instruction}),
            })  # fmt: skip
            if not done:
                still.append(i)
        active = still
    return episodes


MEASURES = ("success", "spl", "softspl", "distance_to_goal", "num_steps")


def evaluate(policy, spec: AgentSpec, envs: list, seeds: list[int]) -> dict[str, float]:
    """Greedy episodes from ``seeds`` (held-out starts), ``len(envs)`` at a time."""
    was_training = policy.model.training
    policy.model.eval()
    episodes = []
    for s in range(0, len(seeds), len(envs)):
        chunk = seeds[s : s + len(envs)]
        episodes += play(policy, spec, envs[: len(chunk)], chunk, sample=False)
    policy.model.train(was_training)
    success = [e["measures"]["success"] for e in episodes]
    low, high = wilson_interval(int(sum(success)), len(success))
    parsed = [t["completion"].parsed for e in episodes for t in e["turns"]]
    return {
        "success": float(np.mean(success)), "ci_low": low, "ci_high": high,
        "spl": float(np.mean([e["measures"]["spl"] for e in episodes])),
        "format": float(np.mean(parsed)), "turns": float(np.mean([len(e["turns"]) for e in episodes])),
        "n": len(episodes),
    }  # fmt: skip


EVAL_SEED_BASE = 1_000_000  # held-out scenes already differ (eval_kwargs); the seeds differ too


class HeldOut:
    """A run's held-out evaluation: ``eval.episodes`` starts of the eval split (``eval_kwargs``'
    scenes), greedy answers, at step 0, every ``eval.interval`` steps and at the last step."""

    def __init__(self, cfg: Config, spec: AgentSpec) -> None:
        self.spec, self.interval = spec, int(cfg.eval.interval)
        self.seeds = [EVAL_SEED_BASE + k for k in range(int(cfg.eval.episodes))]
        self.envs = [make_env(cfg, "eval") for _ in range(max(1, min(8, len(self.seeds))))]

    def maybe(self, run: Run, policy, step: int, steps: int) -> None:
        due = step in (0, steps) or (self.interval and step % self.interval == 0)
        if self.seeds and due:
            run.add_eval(step, evaluate(policy, self.spec, self.envs, self.seeds))


# -- SFT ------------------------------------------------------------------------------------------
def record_demonstrations(cfg: Config, root: Path) -> Path:
    """``data.episodes`` follower episodes on training starts, through the recorder (PNG)."""
    from tqdm import tqdm

    from pixelrl.envs.recording import RecordEpisodes

    env = RecordEpisodes(make_env(cfg, "train"), root, frame_format="png")
    for seed in tqdm(range(int(cfg.data.episodes)), desc="follower demos",
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
) -> list[dict[str, Any]]:
    """Every step of the recorded episodes as (image, goal text, history, target answer), with
    its sampling ``weight``: ``inflection_weight`` where the follower's action differs from
    its previous one (and at the first step), else 1."""
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
                examples.append({
                    "screenshot": spec.prompt.image(frames),
                    "instruction": goal_text(frames[-1], spec.task),
                    "history": spec.prompt.history(actions[:t], codec),
                    "target": codec.render(target_run(actions, t, spec.max_repeat)),
                    "weight": inflection_weight if t == 0 or actions[t] != actions[t - 1] else 1.0,
                })  # fmt: skip
    if not examples:
        raise ConfigError(f"no demonstration steps in {[str(r) for r in roots]}")
    return examples


def _dataset_roots(cfg: Config, run: Run) -> list[Path]:
    if cfg.data.dataset:
        root = Path(cfg.data.dataset)
        if not (root / "meta" / "info.json").is_file():
            raise ConfigError(f"data.dataset: {root} is not a recorded dataset (no meta/info.json)")
        return [root]
    if int(cfg.data.episodes) < 1:
        raise ConfigError("data.episodes must be >= 1 (or give data.dataset)")
    return [record_demonstrations(cfg, run.dir / "demos")]


def run_sft(cfg: Config) -> dict[str, Any]:

    from pixelrl.embodied.vlm_agent import save_agent
    from pixelrl.rl.sft import sft_loop

    spec = agent_spec(cfg)
    check_model(cfg)
    run = Run(cfg)
    roots = _dataset_roots(cfg, run)
    held_out = HeldOut(cfg, spec)
    codec = codec_for(spec, held_out.envs[0])
    policy = load_policy(cfg, codec)
    examples = sft_examples(roots, spec, codec, float(cfg.sft.inflection_weight))
    steps = int(cfg.sft.steps)
    held_out.maybe(run, policy, 0, steps)

    def after_step(step: int, loss: float) -> None:
        run.history.append({"step": step, "loss": loss})
        held_out.maybe(run, policy, step, steps)

    sft_loop(policy, examples, steps, int(cfg.sft.batch_size), float(cfg.sft.lr),
             float(cfg.sft.weight_decay), int(cfg.seed), "vlm-sft", bool(cfg.train.progress),
             after_step, weights=[e["weight"] for e in examples])  # fmt: skip
    save_agent(policy, spec, run.dir / "model")
    run.write("success")
    return {"run_dir": str(run.dir), "examples": len(examples), "eval": run.evals}


# -- GRPO -----------------------------------------------------------------------------------------
def run_grpo(cfg: Config) -> dict[str, Any]:
    from tqdm import tqdm

    from pixelrl.embodied.vlm_agent import save_agent
    from pixelrl.rl.grpo import GRPOConfig, gigpo_advantages, grpo_optimizer_for, update_in_chunks

    if cfg.grpo.reward not in REWARD_KINDS:
        raise ConfigError(f"grpo.reward: {cfg.grpo.reward!r}; known: {', '.join(REWARD_KINDS)}")
    unknown = set(cfg.grpo.rewards) - set(DEFAULTS["grpo"]["rewards"])
    if unknown:
        raise ConfigError(f"grpo.rewards: unknown terms {sorted(unknown)}")
    spec = agent_spec(cfg)
    check_model(cfg)
    gcfg = GRPOConfig.from_section(cfg.grpo.to_dict())
    run = Run(cfg)
    G, P = gcfg.num_samples, int(cfg.grpo.starts_per_step)
    train_envs = [make_env(cfg, "train") for _ in range(G * P)]
    held_out = HeldOut(cfg, spec)
    codec = codec_for(spec, train_envs[0])
    policy = load_policy(cfg, codec)
    ref = policy.frozen_copy() if gcfg.kl_coef else None
    opt, set_lr = grpo_optimizer_for(policy, cfg.grpo)
    rng = np.random.default_rng(int(cfg.seed))
    rewards = {k: float(v) for k, v in cfg.grpo.rewards.to_dict().items()}
    steps = int(cfg.grpo.steps)
    held_out.maybe(run, policy, 0, steps)
    bar = tqdm(range(steps), desc="vlm-grpo", disable=not cfg.train.progress)
    for step in bar:
        starts = [int(s) for s in rng.integers(0, 2**31 - 1, P)]
        policy.model.eval()
        episodes = play(policy, spec, train_envs, [s for s in starts for _ in range(G)], sample=True,
                        temperature=gcfg.temperature, rewards=rewards, reward_kind=str(cfg.grpo.reward),
                        decay=float(cfg.grpo.decay))  # fmt: skip
        policy.model.train()
        adv = gigpo_advantages(
            [[t["reward"] for t in ep["turns"]] for ep in episodes], [s for s in starts for _ in range(G)],
            [[t["key"] for t in ep["turns"]] for ep in episodes], gamma=gcfg.gamma,
            step_weight=gcfg.step_weight, scale_by_std=gcfg.scale_by_std,
        )  # fmt: skip
        rows = [t for ep in episodes for t in ep["turns"]]
        lr = set_lr(step)
        stats = update_in_chunks(
            policy, opt, rows, adv.advantages, ref, gcfg, int(cfg.grpo.minibatch)
        )
        measures = [ep["measures"] for ep in episodes]
        row = {
            "step": step + 1, "reward": float(np.mean([sum(t["reward"] for t in ep["turns"]) for ep in episodes])),
            "success": float(np.mean([m["success"] for m in measures])),
            "spl": float(np.mean([m["spl"] for m in measures])),
            "format": float(np.mean([t["completion"].parsed for t in rows])), "turns": len(rows), "lr": lr,
            **stats,
        }  # fmt: skip
        run.history.append(row)
        bar.set_postfix_str(
            f"success={row['success']:.2f} reward={row['reward']:.2f}", refresh=False
        )
        held_out.maybe(run, policy, step + 1, steps)
    save_agent(policy, spec, run.dir / "model")
    run.write("success")
    return {"run_dir": str(run.dir), "eval": run.evals}


RUNNERS = {"embodied/vlm-sft": run_sft, "embodied/vlm-grpo": run_grpo}


def train(cfg: Config) -> dict[str, Any]:
    import torch

    if cfg.recipe not in RUNNERS:
        raise ConfigError(
            f"recipe {cfg.recipe!r} is not an embodied VLM recipe ({', '.join(RUNNERS)})"
        )
    if int(cfg.torch_threads):
        torch.set_num_threads(int(cfg.torch_threads))
    return RUNNERS[cfg.recipe](cfg)


def run_recipe(name: str, overrides=(), model: str | None = None, print_config: bool = False,
               config: str | Path | None = None) -> dict[str, Any] | None:  # fmt: skip
    """``pixelrl train embodied/vlm-...``: config, ``--model``, run, a summary table."""
    cfg = recipe_config(name, overrides, model, print_config, config, config_for)
    if cfg is None:
        return None
    result = train(cfg)
    print(f"\nrun folder: {result['run_dir']}")
    print(
        f"{'step':>6}{'held-out success':>18}{'95% CI':>16}{'SPL':>7}{'format':>8}{'n':>5}{'cpu s':>8}{'wall s':>8}"
    )
    for r in result["eval"]:
        ci = f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        print(f"{r['step']:>6}{r['success']:>18.3f}{ci:>16}{r['spl']:>7.3f}{r['format']:>8.2f}{r['n']:>5}"
              f"{r['cpu_s']:>8.0f}{r['wall_s']:>8.0f}")  # fmt: skip
    return result
