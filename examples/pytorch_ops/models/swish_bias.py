"""Fused elementwise chain: x * sigmoid(x) + bias (bias broadcast over rows)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * sigmoid(x) + bias"""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + self.bias


batch_size = 4096
dim = 16384


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, dim)]


def get_init_inputs() -> list:
    return [dim]
