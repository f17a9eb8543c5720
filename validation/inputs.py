"""Seeded random inputs for one validation case.

Every parameter gets a value: integer scalars from ``sizes`` / ``values``;
``values`` pin anything (CHARACTER flags, strides, leading dimensions);
floating scalars are random normal; arrays are allocated from their symbolic
shapes (Fortran order for LEFT) and filled by a generator; outputs are
poisoned (a NaN with a recognisable payload, or an integer sentinel) so an
unwritten element shows up in the comparison.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from translate import ir
from validation.npz import read_npz
from validation.signature import ValidationError

INT_SENTINEL = -(2**31) + 1
_POISON_BITS = {np.dtype(np.float64): (np.uint64, 0x7FF80000DEADBEEF),
                np.dtype(np.float32): (np.uint32, 0x7FC0BEEF),
                np.dtype(np.float16): (np.uint16, 0x7E5A)}

Generator = Callable[[tuple[int, ...], np.dtype, np.random.Generator], np.ndarray]


def poison_value(dtype: np.dtype) -> Any:
    """The value an output is filled with before a call."""
    dtype = np.dtype(dtype)
    if dtype in _POISON_BITS:
        utype, bits = _POISON_BITS[dtype]
        return np.array([bits], dtype=utype).view(dtype)[0]
    if dtype.kind in "iu":
        return dtype.type(INT_SENTINEL)
    if dtype.kind == "S":
        return b"?"
    return dtype.type(0)


def is_poison(a: np.ndarray) -> np.ndarray:
    """Elementwise: still holds the poison value (never written)."""
    a = np.asarray(a)
    if a.dtype in _POISON_BITS:
        utype, bits = _POISON_BITS[a.dtype]
        return np.ascontiguousarray(a).view(utype).reshape(a.shape) == bits
    if a.dtype.kind in "iu":
        return a == INT_SENTINEL
    return np.zeros(a.shape, dtype=bool)


@dataclass
class Case:
    """Inputs of one call: scalars (the evaluation environment) and arrays."""

    kernel: str
    scalars: dict[str, Any]
    arrays: dict[str, np.ndarray]
    seed: int
    outputs: tuple[str, ...]
    sizes: dict[str, int] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, Any]:
        return dict(self.scalars)

    def save(self, path: Path) -> None:
        data = {f"s:{k}": np.asarray(v) for k, v in self.scalars.items()}
        data.update({f"a:{k}": v for k, v in self.arrays.items()})
        np.savez(path, **data)

    @staticmethod
    def load_data(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Scalars and arrays from an npz written by :meth:`save` (or golden)."""
        parts = read_npz(path)
        return parts.get("s", {}), parts.get("a", {})


def lookup(mapping: Mapping[str, Any], name: str) -> tuple[bool, Any]:
    """Exact name first, then case-insensitive (Fortran names)."""
    if name in mapping:
        return True, mapping[name]
    low = name.lower()
    for k, v in mapping.items():
        if k.lower() == low:
            return True, v
    return False, None


def _shape_names(kernel: ir.Kernel) -> set[str]:
    names: set[str] = set()
    for a in kernel.arrays:
        for e in (*a.shape, *a.lower):
            names.update(n.name for n in ir.walk(e) if isinstance(n, ir.Var))
    return names


# ---------------------------------------------------------------- generators


def _square_block(shape: tuple[int, ...], spec: str) -> int:
    if len(shape) != 2:
        raise ValidationError(f"generator '{spec}' needs a 2-D array, got shape {shape}")
    return min(shape)


def generate(spec: str, shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator,
             project_dir: Path | None = None) -> np.ndarray:
    """Fill an array (or a 0-d scalar) by a named generator."""
    kind = spec.split(":")[0].strip().lower()
    dtype = np.dtype(dtype)
    if kind == "int":
        try:
            _, lo, hi = spec.split(":")
            return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
        except ValueError:
            raise ValidationError(f"generator '{spec}': write int:LO:HI, e.g. int:1:10") from None
    if dtype.kind in "iu":
        if kind not in ("normal", "uniform", "positive"):
            raise ValidationError(f"generator '{spec}' does not apply to an integer array")
        return rng.integers(1, 11, size=shape).astype(dtype)
    if kind == "normal":
        a = rng.standard_normal(shape)
    elif kind == "uniform":
        a = rng.uniform(-1.0, 1.0, shape)
    elif kind == "positive":
        a = rng.uniform(0.5, 1.5, shape)
    elif kind == "spd":
        k = _square_block(shape, spec)
        a = rng.standard_normal(shape)
        b = rng.standard_normal((k, k))
        a[:k, :k] = b @ b.T / k + np.eye(k)
    elif kind == "diag_dominant":
        k = _square_block(shape, spec)
        a = rng.standard_normal(shape)
        block = a[:k, :k]
        block[np.diag_indices(k)] = np.abs(block).sum(axis=1) + 1.0
    elif ":" in spec:
        a = _user_generator(spec, project_dir)(shape, dtype, rng)
        a = np.asarray(a, dtype=dtype)
        if a.shape != shape:
            raise ValidationError(f"generator '{spec}' returned shape {a.shape}, expected {shape}")
    else:
        raise ValidationError(
            f"unknown input generator '{spec}': use normal, uniform, positive, spd, diag_dominant, "
            "int:LO:HI or module:function")
    return np.asarray(a, dtype=dtype)


def _user_generator(spec: str, project_dir: Path | None) -> Generator:
    module, _, fn = spec.partition(":")
    added = project_dir is not None and str(project_dir) not in sys.path
    if added:
        sys.path.insert(0, str(project_dir))
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ValidationError(f"generator '{spec}': cannot import {module} from {project_dir}: {exc}") from None
    finally:
        if added:
            sys.path.remove(str(project_dir))
    f = getattr(mod, fn, None)
    if not callable(f):
        raise ValidationError(f"generator '{spec}': {module} has no function {fn}(shape, dtype, rng)")
    return f  # type: ignore[no-any-return]


# ---------------------------------------------------------------------- case


def _scalar_value(p: ir.Scalar, kernel: ir.Kernel, sizes: Mapping[str, int], values: Mapping[str, object],
                  generators: Mapping[str, str], rng: np.random.Generator, needed: set[str],
                  project_dir: Path | None) -> Any:
    npdt = np.dtype(p.dtype.numpy)
    if p.intent == ir.Intent.OUT:
        return str(poison_value(npdt).decode()) if p.dtype == ir.DType.CHAR else poison_value(npdt)
    found, v = lookup(values, p.name)
    if not found and p.dtype.is_int:
        found, v = lookup(sizes, p.name)
    if found:
        if p.dtype == ir.DType.CHAR:
            return str(v)
        if p.dtype.is_int or p.dtype == ir.DType.BOOL:
            return npdt.type(int(v))  # type: ignore[call-overload]
        return npdt.type(float(v))  # type: ignore[arg-type]
    if p.dtype == ir.DType.CHAR:
        raise ValidationError(f"no value given for the character flag '{p.name}' (kernel {kernel.name}, "
                              f"{kernel.origin}); add it under values:, e.g. values: {{{p.name}: N}}")
    if p.dtype.is_int:
        if p.name in needed and not p.name.lower().startswith("inc"):
            raise ValidationError(f"no size given for '{p.name}' (kernel {kernel.name}, {kernel.origin}); "
                                  "add it under sizes:")
        return npdt.type(1)  # strides (inc*) and integers no shape depends on
    if p.dtype == ir.DType.BOOL:
        return npdt.type(int(rng.integers(0, 2)))
    found, spec = lookup(generators, p.name)
    return npdt.type(generate(spec if found else "normal", (), npdt, rng, project_dir)[()])


def _default(p: ir.Scalar, kernel: ir.Kernel, env: Mapping[str, Any]) -> int:
    """An extent the routine's accesses need, at this case's sizes (at least 1)."""
    assert p.default is not None
    try:
        return max(1, int(ir.evaluate(p.default, {k: (v.item() if hasattr(v, "item") else v)
                                                   for k, v in env.items()})))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError(f"no value for '{p.name}' (kernel {kernel.name}, {kernel.origin}): the extent its"
                              f" accesses need, {ir.expr_str(p.default)}, cannot be evaluated ({exc}); give it"
                              " under sizes: or the array's shape under shapes:") from None


def make_case(kernel: ir.Kernel, sizes: Mapping[str, int], values: Mapping[str, object],
              generators: Mapping[str, str], seed: int, project_dir: Path | None = None) -> Case:
    """Inputs for one call of ``kernel`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    needed = _shape_names(kernel)
    scalars: dict[str, Any] = {}
    defaulted: list[ir.Scalar] = []
    for p in kernel.params:
        if isinstance(p, ir.Scalar):
            given = lookup(values, p.name)[0] or lookup(sizes, p.name)[0]
            if p.default is not None and not given:
                defaulted.append(p)  # after the others: the default is written in them
                continue
            scalars[p.name] = _scalar_value(p, kernel, sizes, values, generators, rng, needed, project_dir)
    for p in defaulted:
        scalars[p.name] = np.dtype(p.dtype.numpy).type(_default(p, kernel, {**sizes, **scalars}))
    env = dict(scalars)
    # sizes that are not parameters (symbolic dimensions) are visible to shapes too
    for k, v in sizes.items():
        env.setdefault(k, int(v))
        env.setdefault(k.lower(), int(v))
    arrays: dict[str, np.ndarray] = {}
    for a in kernel.arrays:
        shape = []
        for k, e in enumerate(a.shape):
            try:
                shape.append(max(1, int(ir.evaluate(e, env))))  # type: ignore[arg-type]
            except KeyError as exc:
                name = str(exc.args[0]).split("'")[1] if "'" in str(exc.args[0]) else str(exc.args[0])
                if name == f"{a.name}_extent":  # parsers/fortran.py: an assumed size nothing bounds
                    raise ValidationError(f"the extent of the assumed-size array '{a.name}' is unknown (kernel"
                                          f" {kernel.name}, {kernel.origin}): give its shape under shapes:") from None
                raise ValidationError(
                    f"no size given for '{name}' (kernel {kernel.name}, {kernel.origin}; extent {k + 1} of "
                    f"'{a.name}' is {ir.expr_str(e)}); add it under sizes:") from None
        npdt = np.dtype(a.dtype.numpy)
        order = "F" if a.layout == ir.Layout.LEFT else "C"
        if a.intent == ir.Intent.OUT:
            arr = np.full(tuple(shape), poison_value(npdt), dtype=npdt, order=order)
        else:
            found, val = lookup(values, a.name)
            if found:
                arr = np.array(np.broadcast_to(np.asarray(val, dtype=npdt), tuple(shape)), dtype=npdt, order=order)
            elif a.dtype == ir.DType.BOOL and not lookup(generators, a.name)[0]:
                # LOGICAL: .FALSE. and .TRUE. as the compiler stores them (0 and 1); other
                # integers are not LOGICAL values, and the languages read them differently
                arr = np.asarray(rng.integers(0, 2, size=tuple(shape)), dtype=npdt, order=order)
            else:
                found, spec = lookup(generators, a.name)
                arr = np.asarray(generate(spec if found else "normal", tuple(shape), npdt, rng, project_dir),
                                 order=order)
            arr = np.require(arr, dtype=npdt, requirements=[order])
        arrays[a.name] = arr
    outputs = tuple(p.name for p in kernel.params if p.intent.writes) + (("result",) if kernel.result else ())
    return Case(kernel.name, scalars, arrays, seed, outputs, dict(sizes), dict(values))

