"""Row softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = softmax(x, dim=1) of a (batch_size, dim) matrix"""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 16384
dim = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, dim)]


def get_init_inputs() -> list:
    return []
