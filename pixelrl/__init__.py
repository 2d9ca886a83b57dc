"""pixelrl: train agents that act from pixels.

The spine of the project: the CLI (``pixelrl.cli``), configs, RL algorithms (``pixelrl.rl``),
rollout collection, logging and distributed launch. Environments live in ``pixelrl.envs``,
perception and rewards in ``pixelrl.vision``, agents in ``pixelrl.gui_agent`` and
``pixelrl.embodied``, shipped files in ``pixelrl.assets``. In the repository these are the top-level
folders ``envs/``, ``vision/``, ``gui_agent/``, ``embodied/`` and ``assets/``; ``pyproject.toml``
maps them under this one import package, so nothing else is installed at the top level.
"""

__version__ = "0.1.0"
