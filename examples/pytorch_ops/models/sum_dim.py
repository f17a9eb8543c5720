"""Sum reduction over one (non-contiguous) dimension, keeping it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = sum(x, dim=reduce_dim, keepdim=True) of a (batch_size, dim1, dim2) tensor"""

    def __init__(self, reduce_dim: int) -> None:
        super().__init__()
        self.reduce_dim = reduce_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.reduce_dim, keepdim=True)


batch_size = 16
dim1 = 4096
dim2 = 1024
reduce_dim = 1


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs() -> list:
    return [reduce_dim]
