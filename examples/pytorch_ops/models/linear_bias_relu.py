"""GEMM + bias + ReLU: a bias-free linear layer, a separate bias, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(x @ W^T + bias)"""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x)
        x = x + self.bias
        return torch.relu(x)


batch_size = 4096
in_features = 4096
out_features = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, in_features)]


def get_init_inputs() -> list:
    return [in_features, out_features]
