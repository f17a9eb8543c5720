"""A stacked LSTM classifier: the last time step of the top layer through a linear head.
The initial states are drawn in forward (as many published models do when none are given)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int, num_classes: int) -> None:
        super().__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.head = nn.Linear(hidden_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h0 = torch.randn(self.num_layers, x.size(0), self.hidden_size, device=x.device)
        c0 = torch.randn(self.num_layers, x.size(0), self.hidden_size, device=x.device)
        out, _ = self.lstm(x, (h0, c0))
        return self.head(out[:, -1, :])


batch_size = 64
seq_len = 256
input_size = 128
hidden_size = 512
num_layers = 3
num_classes = 10


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, num_classes]
