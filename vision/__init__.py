"""Perception and visual rewards: image ops, timm encoders, the VLM policy wrapper, rewards."""
