"""RMS normalization over the last dimension with a learned scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x / sqrt(mean(x**2, -1) + eps) * weight"""

    def __init__(self, features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight


batch_size = 16384
features = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, features)]


def get_init_inputs() -> list:
    return [features]
