"""Trials whose inputs stress what a shortcut skips (``validation.region``).

Random inputs rarely ask a search to look far: the first element above a random threshold
is usually the first or second. So besides the random trials:

* :func:`sorted_inputs`: every random float input array sorted ascending, and every random
  float scalar input taken from the last quarter of those sorted values: a threshold search
  then meets its answer late in the array, past the first block of any kernel that looks at
  one block only;
* :func:`near_ties` (for regions whose answer is an integer: an index, a count, a flag):
  every random float input within 2^-14 (relative) of one half-precision number, so that in
  fp16 they are all equal: a kernel that compares in fp16 (or bf16) sees only ties.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from translate import ir
from validation.inputs import Case, lookup

BAND = 2.0**-14  # relative spread of the near-tie inputs: below fp16's resolution, far above fp32's


def _random_arrays(kernel: ir.Kernel, case: Case, generators: Mapping[str, str]) -> list[ir.Array]:
    return [a for a in kernel.arrays if a.intent != ir.Intent.OUT and a.dtype.is_float
            and not lookup(case.values, a.name)[0] and not lookup(generators, a.name)[0]]


def _random_scalars(kernel: ir.Kernel, case: Case, generators: Mapping[str, str]) -> list[ir.Scalar]:
    return [p for p in kernel.params if isinstance(p, ir.Scalar) and p.dtype.is_float and p.intent == ir.Intent.IN
            and p.name in case.scalars and not lookup(case.values, p.name)[0]
            and not lookup(case.sizes, p.name)[0] and not lookup(generators, p.name)[0] and p.default is None]


def _order(a: ir.Array) -> str:
    return "F" if a.layout == ir.Layout.LEFT else "C"


def _with(case: Case, scalars: dict, arrays: dict) -> Case:
    return Case(case.kernel, scalars, arrays, case.seed, case.outputs, case.sizes, case.values)


def sorted_inputs(kernel: ir.Kernel, case: Case, generators: Mapping[str, str]) -> Case:
    """``case`` with its random float arrays sorted ascending (memory order) and its random float
    scalars drawn from the last quarter of their values."""
    rng = np.random.default_rng(case.seed + 7)
    arrays, scalars = dict(case.arrays), dict(case.scalars)
    pool: list[float] = []
    for a in _random_arrays(kernel, case, generators):
        arr = arrays[a.name]
        flat = np.sort(arr.reshape(-1, order=_order(a)))
        arrays[a.name] = np.require(flat.reshape(arr.shape, order=_order(a)), dtype=arr.dtype,
                                    requirements=[_order(a)])
        finite = flat[np.isfinite(flat)]
        pool += finite[len(finite) * 3 // 4:].tolist()
    if pool:
        for p in _random_scalars(kernel, case, generators):
            scalars[p.name] = type(case.scalars[p.name])(pool[int(rng.integers(len(pool)))])
    return _with(case, scalars, arrays)


def integer_results(kernel: ir.Kernel) -> bool:
    """Whether the region's answer is an integer or a LOGICAL (an index, a count, a flag): a
    function of that type, or a routine whose every output is one."""
    if kernel.result is not None:
        return not kernel.result.is_float
    outs = [p.dtype for p in kernel.params if p.intent.writes]
    return bool(outs) and all(not d.is_float for d in outs)


def near_ties(kernel: ir.Kernel, case: Case, generators: Mapping[str, str]) -> Case:
    """``case`` with every random float input (arrays and scalars) within ``BAND`` of one value."""
    rng = np.random.default_rng(case.seed + 11)
    arrays, scalars = dict(case.arrays), dict(case.scalars)
    # a half-precision number: every input then rounds to it in fp16 (its neighbours' midpoints lie
    # 2^-11 away, far outside the band), so each comparison an fp16 kernel makes is a tie
    center = float(np.float16(1.0 + float(rng.random())))
    for a in _random_arrays(kernel, case, generators):
        arr = arrays[a.name]
        band = center * (1.0 + BAND * rng.uniform(-1.0, 1.0, size=arr.shape))
        arrays[a.name] = np.require(band.astype(arr.dtype), requirements=[_order(a)])
    # a scalar (a threshold) from the band's middle half: with it at the band's edge every array
    # element may fall on one side of it (for 200 elements, 1 draw in 100), and then the exact
    # comparisons agree with the fp16 ties and the trial catches nothing
    for p in _random_scalars(kernel, case, generators):
        scalars[p.name] = type(case.scalars[p.name])(center * (1.0 + BAND * rng.uniform(-0.5, 0.5)))
    return _with(case, scalars, arrays)
