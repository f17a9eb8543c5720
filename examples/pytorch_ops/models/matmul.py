"""Square-ish matrix product."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B with A (M, K) and B (K, N)"""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 4096
N = 4096
K = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs() -> list:
    return []
