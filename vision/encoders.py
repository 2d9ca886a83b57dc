"""timm image encoders that return feature maps.

Weights never come from a hub here: an encoder is random-initialised (``pretrained=False``)
unless ``weights`` names a file on disk (a timm/PyTorch state dict, ``.pth``/``.bin`` or
``.safetensors``), which is then loaded strictly into the backbone.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["build_encoder", "feature_channels"]


def build_encoder(
    name: str = "resnet18",
    weights: str | Path | None = None,
    out_indices: tuple[int, ...] | None = (-1,),
    in_chans: int = 3,
    **kwargs,
):
    """A timm backbone that maps images ``(N, C, H, W)`` to a list of feature maps.

    ``out_indices`` picks the stages (``(-1,)``: the last one, stride 32 for ResNets; ``None``:
    every stage). ``timm.create_model(..., features_only=True)`` builds it, so any timm CNN
    works (``resnet18``, ``efficientnet_b0``, ``convnext_atto``...). ``weights`` is a local file;
    a missing file is an error, never a download.
    """
    import timm
    import torch

    create_kwargs = dict(features_only=True, pretrained=False, in_chans=in_chans, **kwargs)
    if out_indices is not None:
        create_kwargs["out_indices"] = out_indices
    try:
        model = timm.create_model(name, **create_kwargs)
    except RuntimeError as e:
        raise ValueError(f"timm cannot build encoder {name!r} with features_only: {e}") from None
    if weights is not None:
        path = Path(weights)
        if not path.is_file():
            raise FileNotFoundError(f"encoder weights file not found: {path}")
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
            state = state.get("state_dict", state) if isinstance(state, dict) else state
        # A classifier checkpoint holds a head the feature extractor lacks: drop only that.
        own = model.state_dict()
        missing = [k for k in own if k not in state]
        if missing:
            raise ValueError(
                f"{path}: weights lack {len(missing)} tensors of {name}, e.g. {missing[:3]}"
            )
        model.load_state_dict({k: state[k] for k in own}, strict=True)
    return model


def feature_channels(encoder) -> list[int]:
    """Channels of each feature map the encoder returns (timm's ``feature_info``)."""
    return list(encoder.feature_info.channels())
