"""Plain-data signatures of kernels: what the worker subprocess, golden files
and the comparison need, with shapes evaluated for one case.

Only ``translate.ir`` (pure Python) is imported: this runs on a GPU machine
that lacks the frontend's dependencies.
"""

from __future__ import annotations

from typing import Any

from translate import ir


class ValidationError(Exception):
    """A problem in the validation inputs that the user must fix (a size or a
    value missing, a generator that does not apply): the message says how."""


def outputs_of(kernel: ir.Kernel) -> list[str]:
    """Names compared after a call: out/inout params, plus ``result``."""
    names = [p.name for p in kernel.params if p.intent.writes]
    if kernel.result is not None:
        names.append("result")
    return names


def reduces(kernel: ir.Kernel) -> bool:
    """Whether any loop of the kernel carries a reduction (sums reordered)."""
    return any(isinstance(n, ir.Loop) and n.reductions for s in kernel.body for n in ir.walk(s))


def eval_int(expr: ir.Expr, env: dict[str, Any], what: str) -> int:
    try:
        return int(ir.evaluate(expr, env))  # type: ignore[arg-type]
    except KeyError as exc:
        raise ValidationError(f"cannot evaluate {what}: {exc.args[0]}") from None


def signature(kernel: ir.Kernel, env: dict[str, Any] | None = None) -> dict[str, Any]:
    """The kernel's parameters as JSON-able data; with ``env`` shapes and lower
    bounds are evaluated (extents clamped to >= 1, as the inputs are)."""
    params = []
    for p in kernel.params:
        d: dict[str, Any] = {"name": p.name, "dtype": p.dtype.value, "intent": p.intent.value,
                             "binding": p.binding}
        if isinstance(p, ir.Array):
            d["kind"] = "array"
            d["layout"] = p.layout.value
            if env is not None:
                d["shape"] = [max(1, eval_int(s, env, f"extent {k + 1} of '{p.name}'"))
                              for k, s in enumerate(p.shape)]
                d["lower"] = [eval_int(lo, env, f"lower bound of '{p.name}'") for lo in p.lower] or [1] * p.rank
        else:
            d["kind"] = "scalar"
        params.append(d)
    return {"name": kernel.name, "origin": str(kernel.origin), "params": params,
            "result": kernel.result.value if kernel.result else None, "reduces": reduces(kernel)}


def kernel_from_signature(sig: dict[str, Any]) -> ir.Kernel:
    """Rebuild a body-less kernel from :func:`signature` data (shapes constant)."""
    params: list[ir.Decl] = []
    for d in sig["params"]:
        dtype, intent = ir.DType(d["dtype"]), ir.Intent(d["intent"])
        if d["kind"] == "array":
            shape = tuple(ir.Const(int(s), ir.DType.I64) for s in d["shape"])
            lower = tuple(ir.Const(int(s), ir.DType.I64) for s in d.get("lower", ()))
            params.append(ir.Array(d["name"], dtype, shape, ir.Layout(d["layout"]), intent, lower, d["binding"]))
        else:
            params.append(ir.Scalar(d["name"], dtype, intent, d["binding"]))
    path, _, line = sig.get("origin", "?:0").rpartition(":")
    origin = ir.Origin(path, int(line) if line.isdigit() else 0)
    result = ir.DType(sig["result"]) if sig.get("result") else None
    return ir.Kernel(sig["name"], tuple(params), (), (), origin, result)
