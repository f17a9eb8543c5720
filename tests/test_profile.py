"""validation/profile.py: roofline rates, the CPU timers on a real reference and
Kokkos shim, the CUDA profiling entry (compiled here, run on a GPU), and the GPU
calls (gpu marker) checked on numbers after timing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from targets.base import get_renderer
from translate import ir
from translate.analysis import analyze
from validation import toolchains
from validation.builds import build_candidate
from validation.ceilings import Ceilings
from validation.costs import Work
from validation.inputs import make_case
from validation.profile import build_cuda_entry, cuda_entry_source, precision, rates, time_reference, time_shim
from validation.runners import build_reference
from validation.signature import signature

DOT = """
function sdot2(n, x, y, alpha) result(s)
  integer, intent(in) :: n
  double precision, intent(in) :: x(n), y(n), alpha
  double precision :: s
  integer :: i
  s = 0d0
  do i = 1, n
    s = s + alpha * x(i) * y(i)
  end do
end function
"""

AXPY = """
subroutine axpy2(n, a, x, y, flag)
  integer, intent(in) :: n
  double precision, intent(in) :: a, x(n)
  double precision, intent(inout) :: y(n)
  character, intent(in) :: flag
  integer :: i
  if (flag == 'N') then
    do i = 1, n
      y(i) = y(i) + a * x(i)
    end do
  end if
end subroutine
"""


def kernel(src: str) -> ir.Kernel:
    from parsers.fortran import parse_source  # not on the GPU machine (no fparser there)

    (k,) = parse_source(src, "t.f90", fixed_form=False).kernels
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    return analyze(k)


CEIL = Ceilings("test", copy_gbps=1000.0, fp32_gflops=20000.0, fp64_gflops=10000.0, gemm_fp32_gflops=0.0,
                gemm_fp64_gflops=0.0, measured_at="now")


def test_rates_take_the_ceiling_that_binds() -> None:
    # 1 GB at 1000 GB/s takes 1 ms; 1 ms measured is the roof
    r = rates(Work(10**9, 10**6, False), 1e-3, CEIL, "fp64")
    assert r.bound == "memory" and r.gbps == pytest.approx(1000.0) and r.fraction_of_peak == pytest.approx(1.0)
    # 100 GFLOP at 10 TFLOP/s takes 10 ms; measured 40 ms: a quarter of the roof
    r = rates(Work(10**6, 10**11, False), 0.04, CEIL, "fp64")
    assert r.bound == "compute" and r.fraction_of_peak == pytest.approx(0.25) and r.gflops == pytest.approx(2500.0)
    # fp32 work is judged against the fp32 rate
    assert rates(Work(10**6, 10**11, False), 0.04, CEIL, "fp32").fraction_of_peak == pytest.approx(0.125)
    assert rates(Work(1, 1, False), 1.0, None).fraction_of_peak is None
    assert precision(kernel(DOT)) == "fp64"


@pytest.mark.skipif(not (toolchains.gfortran().available and toolchains.f2py().available), reason="no gfortran/f2py")
def test_cpu_timers_run_the_reference_and_the_kokkos_shim(tmp_path: Path) -> None:
    k = kernel(DOT)
    src = tmp_path / "dot.f90"
    src.write_text(DOT)
    ref = build_reference([src], [k], tmp_path / "ref", cache_dir=tmp_path / "cache")
    assert ref.ok, ref.reason
    case = make_case(k, {"n": 5000}, {}, {}, seed=1)
    sig = signature(k, case.env)
    t = time_reference(ref.lib_dir, ref.module, k, sig, case.scalars, dict(case.arrays), min_time_s=0.01, reps=3)
    assert t.runs >= 3 and 0 < t.min_s <= t.median_s < 1.0
    if toolchains.find_kokkos() is None:
        return
    out = tmp_path / "out"
    get_renderer("kokkos").render(k).write(out)
    lib = build_candidate("kokkos", out / "kokkos", k, tmp_path / "cache")
    assert lib.ok, lib.reason
    t = time_shim(lib.artifact, k, sig, case.scalars, dict(case.arrays), min_time_s=0.01, reps=3)
    assert t.runs >= 3 and 0 < t.median_s < 1.0


@pytest.mark.skipif(toolchains.find_kokkos() is None or shutil.which("cc") is None, reason="needs Kokkos and cc")
def test_kokkos_call_runs_on_the_registered_buffers_not_the_host_arrays(tmp_path: Path) -> None:
    """The profiling call of a Kokkos shim binds its weak ``kt_present`` to the present table:
    the kernels read and write the registered buffers (device memory on a GPU backend; here
    other host arrays), and the host arrays stay as they were (no copies in or out)."""
    from tests.kt_hand_kernels import daxpy
    from validation.profile import kokkos_call

    k = daxpy()
    out = tmp_path / "out"
    get_renderer("kokkos").render(k).write(out)
    lib = build_candidate("kokkos", out / "kokkos", k, tmp_path / "cache")
    assert lib.ok, lib.reason
    case = make_case(k, {"n": 1000}, {"da": 2.0, "incx": 1, "incy": 1}, {}, seed=5)
    sig = signature(k, case.env)
    host = {n: a.copy() for n, a in case.arrays.items()}
    dev = {n: np.ascontiguousarray(a.reshape(-1, order="F")) + 1.0 for n, a in case.arrays.items()}
    want = dev["dy"] + 2.0 * dev["dx"]
    call, got = kokkos_call(lib.artifact, k, sig, case.scalars, host, tmp_path / "cache", dev=dev)
    call()
    assert got is dev
    np.testing.assert_allclose(dev["dy"], want, rtol=1e-14)
    for n, a in case.arrays.items():  # untouched: a shim that copied would have changed dy here
        np.testing.assert_array_equal(host[n], a)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_cuda_entry_compiles_with_result_and_char_arguments(tmp_path: Path) -> None:
    for src in (DOT, AXPY):
        k = kernel(src)
        out = tmp_path / k.name
        get_renderer("cuda").render(k).write(out)
        cu = out / "cuda" / f"{k.name.lower()}_cuda.cu"
        sig = signature(k)
        text = cuda_entry_source(cu, k, sig)
        assert f'extern "C" int kt_dev_{k.name.lower()}(' in text and f"{k.name.lower()}_cuda(" in text
        lib = build_cuda_entry(cu, k, sig, tmp_path / "cache")
        syms = subprocess.run(["nm", "-D", str(lib)], capture_output=True, text=True).stdout
        assert f"kt_dev_{k.name.lower()}" in syms
        assert build_cuda_entry(cu, k, sig, tmp_path / "cache") == lib  # cached


@pytest.mark.gpu
def test_gpu_calls_compute_the_right_numbers(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("no CUDA GPU")
    from tests.kt_hand_kernels import daxpy
    from validation.profile import cuda_call, time_on_gpu, triton_call

    k = daxpy()  # hand-built IR: the GPU machine has no Fortran frontend
    out = tmp_path / "out"
    for target in ("cuda", "triton"):
        get_renderer(target).render(k).write(out)
    case = make_case(k, {"n": 1 << 20}, {"da": 2.0, "incx": 1, "incy": 1}, {}, seed=3)
    sig = signature(k, case.env)
    want = case.arrays["dy"] + 2.0 * case.arrays["dx"]
    cu = out / "cuda" / "daxpy_cuda.cu"
    calls = {"cuda": cuda_call(build_cuda_entry(cu, k, sig, tmp_path / "cache"), k, sig, case.scalars,
                               dict(case.arrays)),
             "triton": triton_call(out / "triton" / "daxpy_triton.py", k, sig, case.scalars, dict(case.arrays))}
    kokkos = toolchains.find_kokkos()
    if kokkos is not None and kokkos.device:  # a Kokkos built for the GPU (Kokkos_ROOT)
        from validation.profile import kokkos_call

        get_renderer("kokkos").render(k).write(out)
        lib = build_candidate("kokkos", out / "kokkos", k, tmp_path / "cache")
        assert lib.ok, lib.reason
        calls["kokkos"] = kokkos_call(lib.artifact, k, sig, case.scalars, dict(case.arrays), tmp_path / "cache")
    for target, (call, dev) in calls.items():
        call()  # one call on fresh device copies: dy + 2 dx
        torch.cuda.synchronize()
        np.testing.assert_allclose(dev["dy"].cpu().numpy(), want, rtol=1e-12, err_msg=target)
        t = time_on_gpu(call, reps=5)
        assert 0 < t.median_s < 0.1, target
