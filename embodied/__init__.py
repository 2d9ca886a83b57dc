"""Embodied agents: ResNet+GRU actor-critic, navigation recipes, shortest-path expert, benchmark.

- ``embodied.policy``     ``PointNavResNetPolicy`` (habitat-baselines' shape) for PointNav / ObjectNav
- ``embodied.resnet``     GroupNorm ResNet / timm backbones with running input normalisation
- ``embodied.task``       the recipes' task module: nav vector envs and the policy from a config
- ``embodied.configs``    recipes: ``pointnav.yaml``, ``pointnav_small.yaml``, ``pointnav_rgbd.yaml``,
                          ``objectnav.yaml`` (``pixelrl train embodied/pointnav ...``)
- ``embodied.agents``     habitat-style ``Agent`` (``reset``, ``act``): trained policy, expert, baselines
- ``embodied.benchmark``  ``Benchmark(dataset).evaluate(agent)``: Success, SPL, SoftSPL, DistanceToGoal
- ``embodied.demo``       train a small PointNav agent for a few minutes, then benchmark it
"""
