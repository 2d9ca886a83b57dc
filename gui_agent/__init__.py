"""GUI agents: pixel pointer policy, VLM agent, training recipes, grounding data, experts, demos.

Modules, one idea each:

- ``pointer_env``: the pointer policy's view of a GUI env (resized image, hashed instruction
  words, a ``MultiDiscrete`` action mapped exactly back to screen pixels); held-out seed split.
- ``pointer_policy``: the timm CNN + instruction encoder + FiLM actor-critic (the PPO Policy).
- ``pointer_bc``: behaviour cloning of the scripted expert (PPO's warm start).
- ``ppo_task``: the ``gui/ppo`` recipe's task module (``make_envs`` / ``make_policy``).
- ``train_vlm``: the ``gui/sft``, ``gui/grounding-grpo`` and ``gui/multiturn-grpo`` recipes.
- ``vlm_tasks``: the tasks those recipes play: env ids and options, seeds, screens, held-out success.
- ``vlm_demos``: their demonstrations: the expert's episodes recorded on the spot, one dataset a task.
- ``vlm_episodes``: a GUI episode for those recipes, live (an env group's player, multi-turn
  groups) or recorded.
- ``vlm_grounding``: their grounding data: click-every-element SFT examples, grounding accuracy,
  the grounding GRPO step.
- ``grounding``: the held-out grounding set (screenshot, instruction, target box).
- ``agents``: ``act(screenshot, instruction) -> Action`` for pointer checkpoints and VLMs.
- ``evaluate``: success per family with 95% CI, ScreenSpot-style grounding accuracy.
- ``demo``: train, evaluate, curve and GIF (the ``make demo`` job).
- ``cli``: ``pixelrl eval``; ``registration``: what this domain offers the spine, by name.
"""
