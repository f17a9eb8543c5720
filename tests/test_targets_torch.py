"""Renderers on kernels in the PyTorch frontend's shape (tests/torch_hand_kernels.py):
Triton run in the interpreter against torch (row programs and fused matmul
epilogues checked against the plain path too), Kokkos built and run through the
``kt_`` shim with ctypes, CUDA compiled by nvcc."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from targets.base import Rendered, Unsupported, get_renderer  # noqa: E402
from targets.triton_rows import row_nest  # noqa: E402
from tests import torch_hand_kernels as th  # noqa: E402
from tests.kt_apart import call_apart  # noqa: E402
from tests.kt_builds import project_library  # noqa: E402
from translate import ir  # noqa: E402
from translate.partition import DeviceNest, partition  # noqa: E402
from translate.schedule import Schedule  # noqa: E402

ON_GPU = os.environ.get("TRITON_INTERPRET") != "1"
DEV = "cuda" if ON_GPU else "cpu"
HAVE_KOKKOS = Path("/usr/include/trilinos/Kokkos_Core.hpp").exists() and shutil.which("g++") is not None
HAVE_NVCC = shutil.which("nvcc") is not None
PLAIN = Schedule(row_programs=False, fuse_epilogues=False)
CASES = {m.__name__: m for m in th.ALL}
C_UNSUPPORTED = {"conv_relu_bias"}  # convolution: a library (cuDNN) only
KOKKOS_UNSUPPORTED = C_UNSUPPORTED | {"half_silu"}  # no f16 View type in Kokkos 3.4 without Experimental


def load(rendered: Rendered, tmp: Path, tag: str) -> ModuleType:
    path = tmp / f"{tag}_{Path(rendered.entry).name}"
    path.write_text(rendered.source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_triton(case: th.Case, mod: ModuleType, symbol: str, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inputs from ``case``, outputs poisoned with NaN; returns (got, want)."""
    g = torch.Generator().manual_seed(seed)
    ins = case.inputs(torch, g, case.sizes)
    want = case.ref(torch, ins)
    args: list[Any] = []
    for p in case.kernel.params:
        if isinstance(p, ir.Array):
            if p.name in ins:
                args.append(ins[p.name].contiguous().reshape(-1).to(DEV))
            else:
                w = want[p.name]
                args.append(torch.full((w.numel(),), float("nan"), dtype=w.dtype, device=DEV))
        else:
            args.append(case.sizes[p.name])
    getattr(mod, symbol)(*args)
    got = {p.name: a.reshape(want[p.name].shape).cpu() for p, a in zip(case.kernel.params, args, strict=True)
           if p.name in want}
    return got, want


def triton_kernels(source: str) -> list[str]:
    return [k for k in re.findall(r"@triton\.jit\ndef (\w+)", source) if not k.startswith("_kt_")]


# ------------------------------------------------------------------ triton


@pytest.mark.parametrize("name", list(CASES))
def test_triton_matches_torch_and_the_plain_path(name: str, tmp_path: Path) -> None:
    case = CASES[name]()
    renderer = get_renderer("triton")
    fast = renderer.render(case.kernel)
    plain = renderer.render(case.kernel, PLAIN)
    got, want = run_triton(case, load(fast, tmp_path, "fast"), fast.symbol)
    got_plain, _ = run_triton(case, load(plain, tmp_path, "plain"), plain.symbol)
    for key, w in want.items():
        torch.testing.assert_close(got[key].float(), w.float(), atol=case.tol, rtol=case.tol)
        torch.testing.assert_close(got[key].float(), got_plain[key].float(), atol=case.tol, rtol=case.tol)
        assert not torch.isnan(got[key].float()).any()
        assert got[key].float().std() > 0


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_row_programs_on_rows_longer_than_a_block(name: str, tmp_path: Path) -> None:
    """n > 4096: the chunked form (a loop over BLOCK_N chunks per source loop)."""
    case = dataclasses.replace(CASES[name](), sizes={"m": 3, "n": 5000})
    r = get_renderer("triton").render(case.kernel)
    got, want = run_triton(case, load(r, tmp_path, "long"), r.symbol)
    torch.testing.assert_close(got["out"], want["out"], atol=1e-4, rtol=1e-4)


def test_matmul_tail_becomes_the_epilogue() -> None:
    for name, kernels in (("linear_relu", ["linear_relu_extern1"]),
                          ("matmul_local_tail", ["matmul_local_tail_extern1"])):
        r = get_renderer("triton").render(CASES[name]().kernel)
        assert triton_kernels(r.source) == kernels  # no separate kernel for the tail
        assert 'tl.dot(a_t, b_t, acc, input_precision="ieee")' in r.source
        assert "# epilogue:" in r.source and "kt_acc" in r.source
        assert any("fused into its store" in n for n in r.notes)
        # fp32 x @ w^T reads w along k: copied into a K x N row-major buffer before the kernel
        assert ("kt_w_rows.copy_(torch.as_strided(w, " in r.source) == (name == "linear_relu")
    batched = get_renderer("triton").render(CASES["bmm_nt"]().kernel).source  # numbers: the test above
    assert "kt_c_rows.copy_(torch.as_strided(c, (mm_batch, mm_k, mm_n), (" in batched
    assert "kt_c_rows, out, mm_m, mm_n, mm_k, " in batched and "mm_k * mm_n, mm_n, 1" in batched
    # the local intermediate the tail read is neither stored nor allocated
    src = get_renderer("triton").render(CASES["matmul_local_tail"]().kernel).source
    assert "tl.store(kt_c" not in src and "h = torch.empty" not in src
    # unfused: the matmul stores and the tail is its own kernel
    plain = get_renderer("triton").render(CASES["linear_relu"]().kernel, PLAIN)
    assert triton_kernels(plain.source) == ["linear_relu_extern1", "linear_relu_loop1"]


@pytest.mark.parametrize("name", ["linear_relu", "bmm", "matmul_local_tail"])
def test_library_matmul_is_torch_matmul_then_the_tail(name: str, tmp_path: Path) -> None:
    """Schedule.matmul_library: the product is one torch.matmul into the output (cuBLAS
    on a GPU), said so in the code and the notes; the tail is its own kernel; the
    numbers match torch and the generated kernel."""
    case = CASES[name]()
    lib = get_renderer("triton").render(case.kernel, Schedule(matmul_library=True))
    assert "torch.matmul(" in lib.source and "library call: cuBLAS through torch" in lib.source
    assert any("cuBLAS through torch" in n for n in lib.notes)
    assert "tl.dot" not in lib.source  # no generated product kernel
    got, want = run_triton(case, load(lib, tmp_path, "lib"), lib.symbol)
    for key, w in want.items():
        torch.testing.assert_close(got[key].float(), w.float(), atol=case.tol, rtol=case.tol)
        assert not torch.isnan(got[key].float()).any()


def test_a_tail_that_reads_across_tiles_is_not_fused(tmp_path: Path) -> None:
    """out2[i, j] = out[i, n-1-j]: another tile's element, so the matmul stores first."""
    case = CASES["linear_relu"]()
    k = case.kernel
    i_, j_ = th.v("i"), th.v("j")
    mirror = th.sub(th.sub(th.N, th.i(1)), j_)
    tail = th.loop("i", th.M, [th.loop("j", th.N, [th.st("out2", (i_, j_), th.ld("out", i_, mirror))])])
    params = (*k.params, th.tout("out2", (th.M, th.N), 1))
    k2 = ir.Kernel(k.name, params, k.locals, (k.body[0], tail), k.origin)
    r = get_renderer("triton").render(k2)
    assert triton_kernels(r.source) == ["linear_relu_extern1", "linear_relu_loop1"]
    mod = load(r, tmp_path, "mirror")
    g = torch.Generator().manual_seed(1)
    ins = case.inputs(torch, g, case.sizes)
    m, n, kk = case.sizes["m"], case.sizes["n"], case.sizes["k"]
    out, out2 = (torch.full((m * n,), float("nan"), device=DEV) for _ in range(2))
    getattr(mod, r.symbol)(*(ins[a].reshape(-1).to(DEV) for a in ("x", "w", "bias")), out, m, kk, n, out2)
    ref = (ins["x"] @ ins["w"].T).to(DEV)
    torch.testing.assert_close(out2.reshape(m, n), ref.flip(-1), atol=1e-4, rtol=1e-4)


def test_row_programs_for_softmax_and_layer_norm() -> None:
    for name in ("softmax", "layernorm"):
        r = get_renderer("triton").render(CASES[name]().kernel)
        (kernel,) = triton_kernels(r.source)
        body = r.source.split(f"def {kernel}(")[1].split("\ndef ")[0]
        assert "tl.arange(0, BLOCK_N)" in body and "row = tl.program_id(0)" in body
        assert "tl.sum(" in body
        assert ("tl.max(" in body) == (name == "softmax")
        assert f"{kernel}[(i_trip,)]" in r.source  # one program per row
        assert any("row program" in n for n in r.notes)
        plain = get_renderer("triton").render(CASES[name]().kernel, PLAIN).source
        assert "BLOCK_N" not in plain


def test_row_pattern_is_structural() -> None:
    k = CASES["softmax"]().kernel
    (nest,) = [s for s in partition(k) if isinstance(s, DeviceNest)]
    assert row_nest(nest, k)
    # the inner loop walking the non-contiguous dim (a column sum) keeps the general path
    i_, j_ = th.v("i"), th.v("j")
    s = th.v("s", th.F32)
    col = th.loop("j", th.N, [th.let("s", th.f(0.0)),
                              th.loop("i", th.M, [th.let("s", th.add(s, th.ld("x", i_, j_)))], th.S),
                              th.st("out", (j_,), s)])
    k2 = ir.Kernel("colsum", (th.tin("x", (th.M, th.N), 0), th.tout("out", (th.N,)), th.dim("m", 0, 0),
                              th.dim("n", 0, 1)), (ir.Scalar("s", th.F32),), (col,), k.origin)
    (nest2,) = [s for s in partition(k2) if isinstance(s, DeviceNest)]
    assert not row_nest(nest2, k2)
    # a scan (the running sum stored each step) is not a reduction: general path
    scan = th.loop("i", th.M, [th.let("s", th.f(0.0)), th.loop("j", th.N, [
        th.let("s", th.add(s, th.ld("x", i_, j_))), th.st("y", (i_, j_), s)], th.S)])
    k3 = ir.Kernel("cumsum", (th.tin("x", (th.M, th.N), 0), th.tout("y", (th.M, th.N)), th.dim("m", 0, 0),
                              th.dim("n", 0, 1)), (ir.Scalar("s", th.F32),), (scan,), k.origin)
    (nest3,) = [s for s in partition(k3) if isinstance(s, DeviceNest)]
    assert not row_nest(nest3, k3)


def test_conv_is_a_library_call_and_says_so() -> None:
    r = get_renderer("triton").render(CASES["conv_relu_bias"]().kernel)
    assert "library call: cuDNN through torch" in r.source
    assert "torch.nn.functional.conv2d(" in r.source
    assert any("library call: cuDNN through torch" in n for n in r.notes)
    for target in ("kokkos", "cuda"):
        with pytest.raises(Unsupported, match="cuDNN"):
            get_renderer(target).render(CASES["conv_relu_bias"]().kernel)


def test_f32_and_f16_stay_single_precision() -> None:
    src = get_renderer("cuda").render(CASES["silu_bias"]().kernel).source
    assert "expf(" in src and "1.0f" in src and not re.search(r"\bexp\(", src)
    half = get_renderer("cuda").render(CASES["half_silu"]().kernel).source
    assert "__half2float(x[i])" in half and "__float2half_rn(" in half
    tri = get_renderer("triton").render(CASES["half_silu"]().kernel).source
    assert ".to(tl.float32)" in tri and "tl.float64" not in tri
    erf = get_renderer("kokkos").render(CASES["matmul_local_tail"]().kernel).source
    assert "erff(" in erf and "tanhf(" in erf


# ------------------------------------------------------------------ kokkos / cuda builds


def _build(target: str, tmp: Path, names: list[str]) -> dict[str, Path]:
    """The named cases rendered and built into one library with the target's CMakeLists."""
    renderer = get_renderer(target)
    lib = project_library(target, [renderer.render(CASES[name]().kernel) for name in names], tmp)
    return dict.fromkeys(names, lib)


@pytest.fixture(scope="module")
def kokkos_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not HAVE_KOKKOS:
        pytest.skip("Kokkos headers or g++ not found")
    return _build("kokkos", tmp_path_factory.mktemp("kokkos"), [n for n in CASES if n not in KOKKOS_UNSUPPORTED])


@pytest.mark.parametrize("name", [n for n in CASES if n not in KOKKOS_UNSUPPORTED])
def test_kokkos_runs_through_the_shim(name: str, kokkos_libs: dict[str, Path]) -> None:
    case = CASES[name]()
    g = torch.Generator().manual_seed(3)
    ins = case.inputs(torch, g, case.sizes)
    want = case.ref(torch, ins)
    keep, args = [], []
    for p in case.kernel.params:
        if isinstance(p, ir.Array):
            a = (ins[p.name].numpy() if p.name in ins else np.full(tuple(want[p.name].shape), np.nan, np.float32))
            a = np.ascontiguousarray(a, dtype=np.float32)
            keep.append((p.name, a))
            args.append(a)
        else:
            args.append(int(case.sizes[p.name]))
    call_apart(kokkos_libs[name], f"kt_{case.kernel.name}", *args)
    for pname, a in keep:
        if pname in want:
            np.testing.assert_allclose(a, want[pname].numpy(), atol=case.tol, rtol=case.tol)


def test_kokkos_layout_right_and_local_views() -> None:
    src = get_renderer("kokkos").render(CASES["matmul_local_tail"]().kernel).source
    assert 'Kokkos::View<float**, Kokkos::LayoutRight> h("h", kt_extent(m), kt_extent(n));' in src
    assert "Kokkos::MDRangePolicy<Kokkos::Rank<3, Kokkos::Iterate::Right" in src


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found")
def test_cuda_compiles(tmp_path: Path) -> None:
    names = [n for n in CASES if n not in C_UNSUPPORTED]
    objs = _build("cuda", tmp_path, names)
    assert all(p.stat().st_size > 0 for p in objs.values())
    src = get_renderer("cuda").render(CASES["local_between"]().kernel).source
    assert "kt_buffer<float> t_buf(kt_extent(m) * kt_extent(n));" in src
    mm = get_renderer("cuda").render(CASES["bmm"]().kernel).source
    assert "kt_matmul<float, float>(a, c, out, mm_m, mm_n, mm_k, mm_batch, mm_s, stream)" in mm
    # batch, row and column strides of a (m x k), c (k x n) and out (m x n), all row-major
    assert "mm_s{(long long)(m) * (long long)(k), (long long)(k), 1, (long long)(k) * (long long)(n), " in mm
