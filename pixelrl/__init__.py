"""pixelrl: train agents that act from pixels.

The spine of the project: the CLI (``pixelrl.cli``), configs, RL algorithms (``pixelrl.rl``),
rollout collection, logging and distributed launch. Environments live in ``envs``, perception and
rewards in ``vision``, agents in ``gui_agent`` and ``embodied``.
"""

__version__ = "0.1.0"
