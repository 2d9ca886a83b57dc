"""Embodied agents: ResNet+GRU actor-critic, navigation recipes, shortest-path expert, benchmark."""
