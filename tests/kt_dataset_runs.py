"""A kernel whose one array argument ``dx`` holds chosen values (NaNs, ties) run through the
Fortran reference and Kokkos, or through CUDA or Triton: what the NaN tests of the conditional
and first-index reductions share. Outputs come back as floats by name."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from translate import ir
from translate.schedule import Schedule
from validation import runners, toolchains
from validation.inputs import Case, make_case

NEEDS_REFERENCE_AND_KOKKOS = pytest.mark.skipif(
    not (toolchains.gfortran().available and toolchains.f2py().available
         and toolchains.find_kokkos() is not None and shutil.which("g++")),
    reason="needs gfortran, numpy.f2py and Kokkos")

Datasets = Mapping[str, Sequence[float]]
Outputs = dict[str, float]


def same(a: float, b: float) -> bool:
    """Equal, or both NaN."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def _case(kernel: ir.Kernel, values: Sequence[float]) -> Case:
    case = make_case(kernel, {"n": len(values)}, {}, {}, seed=1)
    case.arrays["dx"][:] = np.array(values)
    return case


def _floats(outputs: Mapping[str, object]) -> Outputs:
    return {k: float(v) for k, v in outputs.items()}  # type: ignore[arg-type]


def reference_and_kokkos(tmp_path: Path, source_name: str, source: str, kernel: ir.Kernel,
                         datasets: Datasets) -> Iterator[tuple[str, Sequence[float], Outputs, Outputs]]:
    """(name, values, the reference's outputs, Kokkos's outputs) per dataset; ``source`` is the
    Fortran ``kernel`` (analysed) was lowered from."""
    src = tmp_path / source_name
    src.write_text(source)
    ref = runners.build_reference([src], [kernel], tmp_path / "work", cache_dir=tmp_path / "cache")
    assert ref.ok, ref.reason + ref.log
    get_renderer("kokkos").render(kernel).write(tmp_path / "out")
    for what, values in datasets.items():
        case = _case(kernel, values)
        want = runners.run_reference(ref, kernel, case, tmp_path / "work")
        got = runners.run_candidate("kokkos", tmp_path / "out" / "kokkos", kernel, case, tmp_path / "work",
                                    tmp_path / "cache")
        assert want.ok and got.ok, (what, want.reason, got.reason)
        yield what, values, _floats(want.outputs), _floats(got.outputs)


def on_target(tmp_path: Path, target: str, kernel: ir.Kernel, datasets: Datasets,
              schedule: Schedule | None = None) -> Iterator[tuple[str, Sequence[float], Outputs]]:
    """(name, values, the target's outputs) per dataset: CUDA only where there is a GPU (skipped
    elsewhere), Triton compiled there and in its interpreter elsewhere; rendered with
    ``schedule`` (the default one if None)."""
    gpu = toolchains.has_gpu()
    if target == "cuda" and not gpu:
        pytest.skip("no CUDA GPU")
    get_renderer(target, schedule).render(kernel, schedule).write(tmp_path / "out")
    for what, values in datasets.items():
        got = runners.run_candidate(target, tmp_path / "out" / target, kernel, _case(kernel, values),
                                    tmp_path / "work", tmp_path / "cache", gpu=gpu)
        assert got.ok, (what, got.reason)
        yield what, values, _floats(got.outputs)
