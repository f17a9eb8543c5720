"""A stacked bidirectional GRU (time-major) returning the output sequence and the final
hidden state of every layer and direction."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int) -> None:
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bidirectional=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h_n = self.gru(x, h0)
        return out, h_n


seq_len = 256
batch_size = 64
input_size = 128
hidden_size = 256
num_layers = 2


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size), torch.randn(2 * num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
