"""The RL core: rollout collection, storage, GAE and PPO, shared by every recipe.

Read in this order (each module is one idea):

- :mod:`pixelrl.rl.policy` -- the ``Policy`` protocol every trainable agent follows
  (``act`` while collecting, ``evaluate`` while updating) and helpers for recurrent states.
- :mod:`pixelrl.rl.collect` -- the env loop: steps a ``gymnasium.vector.VectorEnv`` with a policy,
  fills a :class:`~pixelrl.rl.storage.RolloutStorage` and reports finished episodes.
- :mod:`pixelrl.rl.storage` -- fixed-size tensors of one rollout (dict observations, recurrent
  states, done masks) and the minibatches PPO reads from them.
- :mod:`pixelrl.rl.gae` -- generalised advantage estimation.
- :mod:`pixelrl.rl.ppo` -- the clipped PPO loss and the update loop (habitat-baselines defaults).
- :mod:`pixelrl.rl.imitation` -- behaviour cloning of a teacher (e.g. the shortest-path
  follower) on the same rollouts, the warm start before PPO (habitat's PIRLNav).
- :mod:`pixelrl.rl.normalize` -- running mean/std for reward and value normalisation.
- :mod:`pixelrl.rl.distributed` -- DD-PPO under ``torchrun``: gradient all-reduce, straggler
  preemption.
- :mod:`pixelrl.rl.vector_envs` -- where a recipe's envs run (this process, Ray actors, the
  async env worker) and the Ray start-up; :mod:`pixelrl.rl.allocator`, the malloc setting of
  every training process.

Collection and update are separate on purpose: GRPO and SFT reuse ``collect`` with their own
update.
"""
