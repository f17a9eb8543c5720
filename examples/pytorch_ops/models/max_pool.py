"""2-D max pooling (2x2, stride 2)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = MaxPool2d(kernel_size, stride)(x)"""

    def __init__(self, kernel_size: int, stride: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
height = 256
width = 256
kernel_size = 2
stride = 2


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs() -> list:
    return [kernel_size, stride]
