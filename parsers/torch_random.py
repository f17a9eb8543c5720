"""Random tensors drawn in ``forward`` (``torch.randn``, ``torch.rand`` and their ``_like`` forms).

A draw is not generated code: it becomes an input array of the kernel (binding
``random:<k>:<fn>``, ``k`` counting the draws in call order), and whatever calls the kernel
draws it first with the same torch call, so the numbers come from torch's generator in the
order the model draws them: ``ModelNew`` calls ``torch.randn`` / ``torch.rand`` before the
launch, and validation records the model's own draws during the reference call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from parsers.torch_emit import TVal
from translate import ir

if TYPE_CHECKING:
    from parsers.torch_lower import Lowerer

DRAW_FUNCTIONS = ("randn", "rand")


def _draw(fn: str) -> object:
    def h(lw: Lowerer, node: torch.fx.Node, args: tuple, kw: dict) -> TVal:
        shape, dtype = lw.shape(node), lw.dtype(node)
        k = len(lw.draws)
        arr = ir.Array(lw.names.fresh(fn), dtype, shape, ir.Layout.RIGHT, ir.Intent.IN, binding=f"random:{k}:{fn}")
        lw.draws.append(arr)
        lw.notes.append(f"library call: torch.{fn} at {lw.where(node)} drawn by the caller before the launch "
                        f"(torch's generator, the model's order) -> {arr.name}")
        return TVal(shape, dtype, array=arr.name, node=node.name, kind="input")

    return h


RANDOM_OPS = {name: _draw(name.removesuffix("_like")) for name in ("randn", "rand", "randn_like", "rand_like")}


class DrawRecorder(torch.overrides.TorchFunctionMode):
    """Keeps every tensor ``torch.randn`` / ``torch.rand`` (and ``_like``) returns, in call order."""

    def __init__(self) -> None:
        super().__init__()
        self.draws: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") in RANDOM_OPS and isinstance(out, torch.Tensor):
            self.draws.append(out.detach().clone())
        return out
