"""LayerNorm, GELU, then a constant scale."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """y = gelu(LayerNorm(features)(x)) * scaling_factor"""

    def __init__(self, features: int, scaling_factor: float) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(features, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.ln(x)) * self.scaling_factor


batch_size = 16384
features = 4096
scaling_factor = 2.0


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, features)]


def get_init_inputs() -> list:
    return [features, scaling_factor]
