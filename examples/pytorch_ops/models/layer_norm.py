"""LayerNorm over the last dimension, with learned weight and bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = LayerNorm(features)(x)"""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(features)
        with torch.no_grad():  # non-trivial affine parameters, so that validation sees them
            self.ln.weight.normal_(1.0, 0.1)
            self.ln.bias.normal_(0.0, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16384
features = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, features)]


def get_init_inputs() -> list:
    return [features]
