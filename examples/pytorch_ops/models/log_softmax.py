"""Row log-softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = log_softmax(x, dim) of a (batch_size, dim) matrix"""

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 16384
dim = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, dim)]


def get_init_inputs() -> list:
    return [1]
