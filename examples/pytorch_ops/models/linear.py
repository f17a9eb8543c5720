"""A linear layer (x @ W^T + b)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = Linear(in_features, out_features)(x)"""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


batch_size = 4096
in_features = 4096
out_features = 4096


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(batch_size, in_features)]


def get_init_inputs() -> list:
    return [in_features, out_features]
