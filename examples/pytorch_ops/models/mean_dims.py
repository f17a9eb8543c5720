"""Mean over the spatial dimensions (global average pooling)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = mean(x, dim=(2, 3)) of a (batch_size, channels, height, width) tensor"""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=(2, 3))


batch_size = 64
channels = 256
height = 64
width = 64


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs() -> list:
    return []
