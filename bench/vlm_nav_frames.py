"""What the navigation VLM's memory of frames costs a turn (issue 53, ``prompt.frames``).

    .venv/bin/python bench/vlm_nav_frames.py [--frames 1 2 4] [--reps 3] [--model tiny-smolvlm]

The recipe's model (``embodied/vlm-sft``'s tiny SmolVLM, random weights: the cost does not
depend on them) on ObjectNav frames of the recipe's env (64 px), the shortest-path follower's
walk through one training episode. For each K the turns' prompts hold the last K frames as K
images (:meth:`pixelrl.embodied.vlm_agent.NavPrompt.image`) and the table gives, a turn:

- prompt tokens (image tokens among them): what the language model reads;
- sampling a group: CPU ms a prompt for ``--samples`` (G) sampled answers of each of
  ``--prompts`` prompts in one ``generate`` (a GRPO group's first turn, where its G episodes
  share the start), with the policy's prompt sharing (each prompt's prefill run once, its cache
  repeated for the G samples) and without it (every sample runs its prompt);
- training: CPU ms a row for the log-probs and backward of a batch of ``--batch`` rows (SFT's
  step; GRPO's update, whose G rows of one prompt share its prompt pass);
- greedy play: CPU ms a turn of ``--prompts`` episodes answered by one batched ``generate``.

CPU time is the process's (user + system, ``resource``), one torch thread; the machine may be
shared, which inflates wall time more than CPU time.
"""

from __future__ import annotations

import argparse
import resource


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def follower_walk(cfg, steps: int) -> list[dict]:
    """The observations of the follower's first ``steps`` steps on the first training start."""
    from pixelrl.embodied.vlm_spec import make_env
    from pixelrl.envs import task_family

    env = make_env(cfg, "train")
    obs, _ = env.reset(seed=task_family("navigation").seeds.seeds("train", 1)[0])
    nav, follower = env.unwrapped, env.unwrapped.shortest_path_follower()
    seen = [obs]
    while len(seen) < steps:
        action = follower.get_next_action(nav.state.position, nav.state.yaw)
        obs, _, terminated, truncated, _ = env.step(action if action else 1)  # walk past a stop
        seen.append(obs)
        if terminated or truncated:
            obs, _ = env.reset(seed=len(seen))
            seen.append(obs)
    env.close()
    return seen[:steps]


def timed(fn, reps: int) -> float:
    fn()  # warm-up: first-call allocations and caches
    start = cpu_seconds()
    for _ in range(reps):
        fn()
    return (cpu_seconds() - start) / reps


HISTORY = ["move_forward(3), turn_left(1), move_forward(4)"]
ANSWERS = ["move_forward(3)", "turn_left(2)", "stop", "move_forward(1)"]


def measure(policy, k: int, walk: list[dict], goal: str, args) -> tuple:
    """One table row: K, prompt tokens, image tokens, and CPU ms of sampling (shared and
    not), a training row and a greedy turn."""
    from pixelrl.embodied.vlm_agent import NavPrompt

    prompt = NavPrompt(frames=k)
    # P prompts from P different turns of the walk (each with its own last K frames)
    images = [prompt.image(walk[: 12 + p + 1]) for p in range(args.prompts)]
    goals, histories = [goal] * len(images), [HISTORY] * len(images)
    ids = policy.encode_prompts(images, goals, histories)["input_ids"][0]
    image_tokens = int((ids == policy.model.config.image_token_id).sum())

    def sample(share: bool):
        policy.share_prompts = share
        return lambda: policy.generate(images, goals, histories, num_samples=args.samples,
                                       max_new_tokens=8, do_sample=True)  # fmt: skip

    shared, unshared = timed(sample(True), args.reps), timed(sample(False), args.reps)
    policy.share_prompts = True
    # the training batch: G answers of each of batch/G prompts (the same image object: shared)
    rows = [images[i % len(images)] for i in range(args.batch // args.samples)
            for _ in range(args.samples)]  # fmt: skip
    targets = [ANSWERS[i % len(ANSWERS)] for i in range(len(rows))]

    def train_step():
        policy.model.zero_grad()
        scored = policy.score(rows, [goal] * len(rows), targets, [HISTORY] * len(rows))
        (-scored.sequence_logprobs.mean()).backward()

    step = timed(train_step, args.reps)
    greedy = timed(lambda: policy.generate(images, goals, histories, num_samples=1,
                                           max_new_tokens=8, do_sample=False), args.reps)  # fmt: skip
    n = len(images)
    return (k, len(ids), image_tokens, 1e3 * shared / n, 1e3 * unshared / n,
            1e3 * step / len(rows), 1e3 * greedy / n)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=8, help="episodes a turn (P)")
    parser.add_argument("--samples", type=int, default=4, help="GRPO's G")
    parser.add_argument("--batch", type=int, default=16, help="training rows a step")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    from pixelrl.embodied.vlm_spec import agent_spec, codec_for, make_env
    from pixelrl.embodied.vlm_train import config_for
    from pixelrl.recipes import get_recipe
    from pixelrl.vision.vlm import load_vlm

    cfg = config_for(get_recipe("embodied/vlm-sft").config, ["env.id=pixelrl/ObjectNav-v0"])
    spec, env = agent_spec(cfg), make_env(cfg, "train")
    codec = codec_for(spec, env)
    env.close()
    policy = load_vlm(str(cfg.model), codec, text_size=cfg.text_size.to_dict(),
                      vision_size=cfg.vision_size.to_dict(),
                      vocab_size=int(cfg.tokenizer.vocab_size))  # fmt: skip
    walk = follower_walk(cfg, 12 + args.prompts)
    goal = spec.prompt.goal(walk[0], spec.task)
    rows = [measure(policy, k, walk, goal, args) for k in args.frames]
    print(f"model {cfg.model} (recipe embodied/vlm-sft), frames {walk[0]['rgb'].shape[:2]} px, "
          f"P={args.prompts} prompts, G={args.samples}, batch {args.batch}, reps {args.reps}, "
          "1 torch thread; CPU ms")  # fmt: skip
    print("| K frames | prompt tokens (image) | G samples, shared, ms/prompt | unshared | "
          "train ms/row | greedy play ms/turn |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for k, tokens, image_tokens, shared, unshared, step, greedy in rows:
        print(f"| {k} | {tokens} ({image_tokens}) | {shared:.1f} | {unshared:.1f} | {step:.1f} | "
              f"{greedy:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
