"""GUI agents: pixel pointer policy, VLM agent, training recipes, grounding data, experts, demos."""
