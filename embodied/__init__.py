"""Embodied agents: ResNet+GRU actor-critic, navigation recipes, shortest-path expert, benchmark.

- ``pixelrl.embodied.policy``     ``PointNavResNetPolicy`` (habitat-baselines' shape) for PointNav / ObjectNav
- ``pixelrl.embodied.resnet``     GroupNorm ResNet / NatureCNN / timm backbones with running input normalisation
- ``pixelrl.embodied.task``       the recipes' task module: nav vector envs and the policy from a config
- ``pixelrl.embodied.configs``    recipes: ``pointnav.yaml``, ``pointnav_small.yaml``, ``pointnav_rgbd.yaml``,
                          ``objectnav.yaml`` (``pixelrl train embodied/pointnav ...``)
- ``pixelrl.embodied.agents``     habitat-style ``Agent`` (``reset``, ``act``): trained policy, expert, baselines
- ``pixelrl.embodied.benchmark``  ``Benchmark(dataset).evaluate(agent)``: Success, SPL, SoftSPL, DistanceToGoal
- ``pixelrl.embodied.vlm_train``  the ``embodied/vlm-sft`` and ``embodied/vlm-grpo`` recipes (``NavTask``)
- ``pixelrl.embodied.vlm_spec``   their set-up: each split's env options and scenes, the agent spec
- ``pixelrl.embodied.vlm_demos``  their demonstrations: the follower's episodes, recorded and read back
- ``pixelrl.embodied.vlm_episodes``  their episodes: the player's turns and rewards, play, greedy evaluation
- ``pixelrl.embodied.rewards``  the turn reward's named, weighted terms and default weights
- ``pixelrl.embodied.demo``       train a small PointNav agent for a few minutes, then benchmark it
- ``pixelrl.embodied.cli``        ``pixelrl bench nav`` and ``pixelrl record --agent vlm``
- ``pixelrl.embodied.registration``  what this domain offers the spine, by name (``pixelrl.registry``)
"""
