"""A ResNet basic block: two 3x3 convolutions with batch norm (eval mode), ReLU, and a
1x1 projection on the skip path when the channel count changes."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.skip = nn.Sequential(nn.Conv2d(in_channels, channels, 1, bias=False), nn.BatchNorm2d(channels))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.skip(x))


batch_size = 32
in_channels = 64
channels = 128
height = 56
width = 56


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, channels]
