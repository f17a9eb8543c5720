"""The tensors a model carries between calls, and which of them ``forward`` updates.

A model's tensors are its parameters and buffers (by ``state_dict`` key, non-persistent
buffers included) and its plain tensor attributes (``self.hidden = torch.randn(...)`` set
in ``__init__``), named the same way (``cell.hidden``). Capture passes every one of them as
a graph input. A tensor that ``forward`` reassigns (``self.hidden = torch.tanh(...)``) or
updates in place (``self.hidden.copy_(h0)``) is *state*: its value after the call is an
extra output of the kernel (binding ``state:<key>``), validation compares it with the
model's, and ``ModelNew`` stores it back after each call.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch


def model_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Parameters and buffers in ``state_dict`` order, then the rest of them, then plain
    tensor attributes of every submodule."""
    named: dict[str, torch.Tensor] = dict(model.named_parameters())
    named.update(dict(model.named_buffers()))
    keys = list(model.state_dict().keys())
    ordered = {k: named[k] for k in keys if k in named}
    ordered.update({k: v for k, v in named.items() if k not in ordered})
    for prefix, sub in model.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("__"):
                key = f"{prefix}.{attr}" if prefix else attr
                ordered.setdefault(key, value)
    return ordered


def get_tensor(model: torch.nn.Module, key: str) -> torch.Tensor:
    obj: object = model
    for part in key.split("."):
        obj = getattr(obj, part)
    assert isinstance(obj, torch.Tensor)
    return obj


def restore(model: torch.nn.Module, saved: dict[str, torch.Tensor]) -> None:
    """Put saved values back: copied in place where the shape agrees, else set as the attribute."""
    for key, value in saved.items():
        owner: object = model
        *path, name = key.split(".")
        for part in path:
            owner = getattr(owner, part)
        current = getattr(owner, name)
        if current.shape == value.shape:
            with torch.no_grad():
                current.copy_(value)
        else:
            setattr(owner, name, value.clone())


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor of the model, detached copies (the state before or after a call)."""
    return {k: v.detach().clone() for k, v in model_tensors(model).items()}


def updated_keys(model: torch.nn.Module, inputs: Sequence[object]) -> list[str]:
    """The keys of the tensors one ``forward`` call reassigns or updates in place, found by
    calling it on a copy of the model (the model itself is not touched); none when the copy
    or the call fails."""
    try:
        twin = copy.deepcopy(model)
        before = model_tensors(twin)
        versions = {k: v._version for k, v in before.items()}
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
        with torch.no_grad():
            twin(*args)
        after = model_tensors(twin)
    except Exception:  # a model that cannot be copied or called this way: capture says what fails
        return []
    return [k for k, v in before.items() if k in after and (after[k] is not v or v._version != versions[k])]


class StateReader:
    """A forward hook that keeps the values of ``keys`` right after the call (inside
    ``functional_call``, before the swapped-in tensors are put back)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)
        self.values: list[torch.Tensor] = []

    def __call__(self, module: torch.nn.Module, args: object, output: object) -> None:
        self.values = [get_tensor(module, k) for k in self.keys]
