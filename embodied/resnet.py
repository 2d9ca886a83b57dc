"""Visual encoders for navigation policies, as in habitat-baselines' ``ResNetEncoder``.

- :class:`RunningMeanAndVar` -- per-channel input normalisation with running statistics (depth
  in metres and RGB have very different ranges; statistics are updated by the trainer once per
  rollout, identically on every DD-PPO rank).
- :class:`GroupNormResNet` -- a ResNet with GroupNorm instead of BatchNorm (batch statistics are
  meaningless across the correlated frames of a rollout); habitat's ``resnet18``/``resnet50``
  with configurable width (``base_planes``) and depth (``layers``).
- :class:`NatureCNN` -- the DQN paper's three convs (stable-baselines3's default image encoder),
  for comparing trainers on the network the other one uses (``policy.backbone=nature``).
- :class:`VisualEncoder` -- normalisation -> backbone (ours, NatureCNN or any timm model) -> a 3x3
  "compression" conv to about ``feature_size`` values (not for NatureCNN, which SB3 flattens
  as is) -> flatten -> linear -> ReLU.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from pixelrl.rl.normalize import RunningMeanStd


class RunningMeanAndVar(nn.Module):
    """Normalise ``(B, C, H, W)`` inputs per channel with running mean and variance."""

    def __init__(self, channels: int):
        super().__init__()
        self.stats = RunningMeanStd((channels,))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        self.stats.update(x.permute(0, 2, 3, 1).reshape(-1, x.shape[1]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = self.stats.mean.to(x.dtype).view(1, -1, 1, 1)
        std = self.stats.std.to(x.dtype).view(1, -1, 1, 1)
        return (x - mean) / std


class BasicBlock(nn.Module):
    """Two 3x3 convs with GroupNorm and a residual connection (1x1 conv when the shape changes)."""

    def __init__(self, in_planes: int, planes: int, ngroups: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.norm1 = nn.GroupNorm(ngroups, planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.norm2 = nn.GroupNorm(ngroups, planes)
        self.shortcut = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.GroupNorm(ngroups, planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.norm1(self.conv1(x)))
        out = self.norm2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class GroupNormResNet(nn.Module):
    """Stem (7x7 conv /2, max-pool /2) then four stages of basic blocks (strides 1, 2, 2, 2)."""

    def __init__(
        self,
        in_channels: int,
        base_planes: int = 16,
        ngroups: int = 8,
        layers: Sequence[int] = (1, 1, 1, 1),
    ):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, base_planes, 7, 2, 3, bias=False),
            nn.GroupNorm(ngroups, base_planes),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        stages, planes, in_planes = [], base_planes, base_planes
        for i, blocks in enumerate(layers):
            stride = 1 if i == 0 else 2
            for b in range(blocks):
                stages.append(BasicBlock(in_planes, planes, ngroups, stride if b == 0 else 1))
                in_planes = planes
            planes *= 2
        self.stages = nn.Sequential(*stages)
        self.out_channels = in_planes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stages(self.stem(x))


class NatureCNN(nn.Module):
    """Mnih et al. (2015)'s convs, as stable-baselines3's ``NatureCNN`` has them (8x8/4 32,
    4x4/2 64, 3x3/1 64, ReLU after each; its linear layer is :class:`VisualEncoder`'s ``fc``)."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(in_channels, 32, 8, 4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, 1),
            nn.ReLU(),
        )
        self.out_channels = 64

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.convs(x)


def _timm_backbone(name: str, in_channels: int) -> tuple[nn.Module, int]:
    import timm  # heavy; only when asked for

    model = timm.create_model(
        name, pretrained=False, in_chans=in_channels, num_classes=0, global_pool=""
    )
    return model, model.num_features


class VisualEncoder(nn.Module):
    """Image ``(B, C, H, W)`` float -> feature vector ``(B, output_size)``."""

    def __init__(
        self,
        in_channels: int,
        image_size: tuple[int, int],
        output_size: int = 256,
        backbone: str = "resnet",
        base_planes: int = 16,
        ngroups: int = 8,
        layers: Sequence[int] = (1, 1, 1, 1),
        feature_size: int = 512,
        normalize_inputs: bool = True,
    ):
        super().__init__()
        self.normalize = RunningMeanAndVar(in_channels) if normalize_inputs else None
        if backbone == "resnet":
            self.backbone = GroupNormResNet(in_channels, base_planes, ngroups, layers)
            channels = self.backbone.out_channels
        elif backbone == "nature":
            self.backbone = NatureCNN(in_channels)
            channels = self.backbone.out_channels
        elif backbone.startswith("timm:"):
            self.backbone, channels = _timm_backbone(backbone[len("timm:") :], in_channels)
        else:
            raise ValueError(
                "policy.backbone must be 'resnet', 'nature' or 'timm:<model name>', "
                f"got {backbone!r}"
            )
        with torch.no_grad():  # the backbone's output grid for this image size
            self.backbone.eval()  # (BatchNorm in timm models refuses a batch of one in training)
            h, w = self.backbone(torch.zeros(1, in_channels, *image_size)).shape[-2:]
            self.backbone.train()
        if backbone == "nature":  # SB3 flattens NatureCNN's map as it is
            compressed, self.compression = channels, nn.Identity()
        else:
            # habitat: a 3x3 conv squeezes the channels so the flattened map has ~feature_size values
            compressed = max(1, round(feature_size / (h * w)))
            groups = 1 if compressed % ngroups else ngroups
            self.compression = nn.Sequential(
                nn.Conv2d(channels, compressed, 3, 1, 1, bias=False),
                nn.GroupNorm(groups, compressed),
                nn.ReLU(inplace=True),
            )
        self.fc = nn.Sequential(
            nn.Flatten(), nn.Linear(compressed * h * w, output_size), nn.ReLU(inplace=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.normalize is not None:
            x = self.normalize(x)
        return self.fc(self.compression(self.backbone(x)))
