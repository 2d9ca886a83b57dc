"""Throughput of the navigation vision-language agent on CPU, with the ResNet+GRU agent on the
same episodes in the same run for scale.

    .venv/bin/python bench/vlm_nav_throughput.py [--episodes 8] [--envs 8] [--agent RUN/model]

On the ``embodied/vlm-sft`` recipe's PointNav setting (RGB 64 px, 1-2 rooms; its tiny model
from config with random weights, or ``--agent`` a trained agent folder):

- env frames/s under the VLM agent: ``--episodes`` held-out episodes played ``--envs`` at a time
  with one batched greedy ``generate`` per turn (embodied.vlm_episodes.play), so generation is
  included; also answers (completions) per second and low-level steps per answer;
- the same episodes under the ``embodied/pointnav`` recipe's ResNet+GRU policy (random
  weights: the cost of acting, not its skill) one env at a time, as ``pixelrl bench nav`` runs it;
- SFT samples/s (``sft_step``, the recipe's batch) and GRPO samples/s (one ``update_in_chunks``
  over the turns the VLM episodes produced).

Figures are per wall second and per CPU second of this process (the second holds on a shared
machine). A random tiny model mostly answers text that does not parse (an idle turn each);
pass ``--agent`` for the figures of a trained agent, whose answers run several steps.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _clock():
    return time.perf_counter(), time.process_time()


def _since(start) -> tuple[float, float]:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--agent", default=None, help="a trained agent folder (RUN/model)")
    parser.add_argument("--sft-steps", type=int, default=10)
    parser.add_argument(
        "--device", default="cpu", help="cuda: the GPU check (bench/gpu_vlm_nav.sh)"
    )
    parser.add_argument("--dtype", default=None, help="e.g. bfloat16 (on a GPU)")
    parser.add_argument("--size", nargs="*", default=[], metavar="KEY=VALUE",
                        help="recipe overrides for a larger tiny model, e.g. "
                        "text_size.hidden_size=1024 text_size.num_hidden_layers=12")  # fmt: skip
    args = parser.parse_args()

    import torch

    import pixelrl.envs  # noqa: F401
    from pixelrl.embodied import vlm_train as vt
    from pixelrl.embodied.agents import PolicyAgent
    from pixelrl.embodied.task import make_policy
    from pixelrl.embodied.vlm_agent import load_agent
    from pixelrl.embodied.vlm_episodes import play
    from pixelrl.recipes import get_recipe
    from pixelrl.rl.grpo import GRPOConfig, gigpo_advantages, grpo_optimizer, update_in_chunks
    from pixelrl.rl.sft import sft_step
    from pixelrl.rl.text.rows import Example
    from pixelrl.train import config_for as rl_config

    overrides = ["train.progress=false", f"device={args.device}", *args.size]
    if args.dtype:
        overrides.append(f"dtype={args.dtype}")
    cfg = vt.config_for(get_recipe("embodied/vlm-sft").config, overrides)
    cfg.recipe = "embodied/vlm-sft"
    spec = vt.agent_spec(cfg)
    envs = [vt.make_env(cfg, "eval") for _ in range(args.envs)]
    nav = envs[0].unwrapped.cfg
    if args.agent:
        agent = load_agent(args.agent, nav.forward_step, nav.turn_degrees, device=args.device)
        policy, spec = agent.policy, agent.spec
    else:
        policy = vt.load_policy(cfg, vt.codec_for(spec, envs[0]))
    params = sum(p.numel() for p in policy.model.parameters())
    seeds = [vt.EVAL_SEED_BASE + k for k in range(args.episodes)]
    print(f"model: {args.agent or cfg.model} ({params / 1e6:.2f}M parameters, {args.device}, "
          f"{args.dtype or 'float32'}), torch threads {torch.get_num_threads()}, "
          f"{args.episodes} episodes, RGB {nav.width} px")  # fmt: skip

    # the VLM agent: batched greedy answers
    policy.model.eval()
    start = _clock()
    episodes = []
    for s in range(0, len(seeds), len(envs)):
        chunk = seeds[s : s + len(envs)]
        episodes += play(policy, spec, envs[: len(chunk)], chunk, sample=False)
    vlm_wall, vlm_cpu = _since(start)
    steps = sum(e.measures["num_steps"] for e in episodes)
    turns = sum(len(e.turns) for e in episodes)
    parsed = np.mean([t.completion.parsed for e in episodes for t in e.turns])

    # the ResNet+GRU agent on the same episodes, one env at a time
    pcfg = rl_config("embodied/pointnav")  # its network; the VLM recipe's env (RGB)
    env = vt.make_env(cfg, "eval")
    resnet = PolicyAgent(make_policy(pcfg, env.observation_space, env.action_space), seed=0)
    start = _clock()
    resnet_steps = 0
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        resnet.reset()
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(resnet.act(obs))
            resnet_steps += 1
            done = terminated or truncated
    resnet_wall, resnet_cpu = _since(start)

    # SFT: the recipe's batch, on prompts from the VLM episodes with follower-style targets
    rows = [t for e in episodes for t in e.turns]
    bs = int(cfg.sft.batch_size)
    batch = [Example(r.prompt, "move_forward(2)") for r in (rows * bs)[:bs]]
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-5)
    policy.model.train()
    sft_step(policy, opt, batch)  # warm-up
    start = _clock()
    for _ in range(args.sft_steps):
        sft_step(policy, opt, batch)
    sft_wall, sft_cpu = _since(start)

    # GRPO: one update over every turn of the episodes (advantages from their own rewards)
    adv = gigpo_advantages(
        [[t.reward for t in e.turns] for e in episodes], list(range(len(episodes))),
        [[t.key for t in e.turns] for e in episodes],
    )  # fmt: skip
    advantages = np.asarray(adv.advantages, dtype=np.float32) + 1.0  # every row does work
    gopt, _ = grpo_optimizer(policy, 1e-6, "constant", 1)
    start = _clock()
    update_in_chunks(policy, gopt, rows, advantages, None, GRPOConfig(lr=1e-6), 32)
    grpo_wall, grpo_cpu = _since(start)
    tokens = sum(len(r.completion.token_ids) for r in rows)

    print(f"\n{'what':<44}{'per wall s':>12}{'per CPU s':>12}")
    table = [
        ("VLM agent: env frames (low-level steps)", steps, vlm_wall, vlm_cpu),
        ("VLM agent: answers (completions)", turns, vlm_wall, vlm_cpu),
        ("ResNet+GRU agent: env frames", resnet_steps, resnet_wall, resnet_cpu),
        ("SFT samples", args.sft_steps * bs, sft_wall, sft_cpu),
        ("GRPO update samples (turns)", len(rows), grpo_wall, grpo_cpu),
        ("GRPO update completion tokens", tokens, grpo_wall, grpo_cpu),
    ]
    for name, n, wall, cpu in table:
        print(f"{name:<44}{n / wall:>12.1f}{n / max(cpu, 1e-9):>12.1f}")
    print(f"\nsteps per answer {steps / max(turns, 1):.2f}, answers parsed {parsed:.2f}; "
          f"VLM / ResNet env frames per wall s: {(steps / vlm_wall) / (resnet_steps / resnet_wall):.2f}")  # fmt: skip
    for e in envs:
        e.close()
    env.close()


if __name__ == "__main__":
    main()
