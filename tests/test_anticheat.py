"""validation.anticheat: cheating snippets are caught with the right rule and line; clean kernels,
comments, strings and the repository's own generated files are not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from validation.anticheat import RULES, CheatContext, Violation, check

ROOT = Path(__file__).resolve().parents[1]
CUDA = CheatContext("cuda", ("saxpy",), sizes=(4000,))
KOKKOS = CheatContext("kokkos", ("saxpy",), sizes=(4000,))
TRITON = CheatContext("triton", ("saxpy",), sizes=(4000,))
TORCH = CheatContext("triton", ("gelu", "Model"), sizes=(4000,), replaces_torch=True)


def marked(text: str) -> list[int]:
    """The 1-based lines carrying a ``CHEAT`` marker comment (markers are comments: stripped before matching)."""
    return [i for i, line in enumerate(text.split("\n"), 1) if "CHEAT" in line]


def hits(text: str, ctx: CheatContext) -> set[tuple[str, int]]:
    return {(v.rule, v.line) for v in check(text, ctx)}


def assert_caught(text: str, ctx: CheatContext, rule: str) -> None:
    """Every marked line is reported under ``rule`` and nothing else is reported."""
    assert hits(text, ctx) == {(rule, line) for line in marked(text)}, check(text, ctx)


CLEAN_CUDA = """\
#include <cuda_runtime.h>
// saxpy: y = a*x + y. The reference saxpy_(n, a, x, y) was validated at n = 4000;
/* try { cudaEventRecord(ev); } catch (...) { static float cache[4000]; fopen("golden.npz"); } */
__global__ void saxpy_kernel(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

cudaError_t saxpy_cuda(int n, float a, const float* x, float* y, cudaStream_t stream) {
    const int block = 256;
    saxpy_kernel<<<(n + block - 1) / block, block, 0, stream>>>(n, a, x, y);
    return cudaGetLastError();
}

static cudaError_t shim_impl(int n, float a, const float* x, float* y) {
    float *x_d = nullptr, *y_d = nullptr;
    cudaError_t err = cudaMalloc(&x_d, n * sizeof(float));
    if (err != cudaSuccess) {
        fprintf(stderr, "saxpy: cudaMalloc failed: %s (n=4000?)\\n", cudaGetErrorString(err));
        return err;
    }
    cudaMalloc(&y_d, n * sizeof(float));
    cudaMemcpy(x_d, x, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(y_d, y, n * sizeof(float), cudaMemcpyHostToDevice);
    const cudaStream_t stream = 0;
    err = saxpy_cuda(n, a, x_d, y_d, stream);
    if (err != cudaSuccess) { cudaFree(x_d); cudaFree(y_d); return err; }
    cudaStreamSynchronize(stream);
    cudaMemcpy(y, y_d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x_d);
    cudaFree(y_d);
    return cudaSuccess;
}

extern "C" void kt_saxpy(int n, float a, const float* x, float* y) { shim_impl(n, a, x, y); }
"""

CLEAN_KOKKOS = """\
#include <Kokkos_Core.hpp>
namespace kt_saxpy_detail {
constexpr int kVector = 8;
static const double kHalf = 0.5;
inline void ensure_kokkos() { if (!Kokkos::is_initialized()) Kokkos::initialize(); }
}  // namespace kt_saxpy_detail

void saxpy_kokkos(int n, double a, Kokkos::View<const double*> x, Kokkos::View<double*> y) {
    Kokkos::parallel_for("saxpy", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(const int i) { y(i) += a * x(i); });
}

extern "C" void kt_saxpy(int n, double a, const double* x, double* y) {
    kt_saxpy_detail::ensure_kokkos();
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> xh(x, n);
    Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> yh(y, n);
    auto xd = Kokkos::create_mirror_view_and_copy(Kokkos::DefaultExecutionSpace::memory_space(), xh);
    auto yd = Kokkos::create_mirror_view_and_copy(Kokkos::DefaultExecutionSpace::memory_space(), yh);
    saxpy_kokkos(n, a, xd, yd);
    Kokkos::deep_copy(yh, yd);
    Kokkos::fence();
}
"""

CLEAN_TRITON = '''\
"""Triton saxpy. Not: torch.matmul(a, b), import numpy, time.sleep(1), open(path), 4000."""
import torch
import triton
import triton.language as tl

# try: saxpy(...) except: torch.cuda.synchronize()  -- a comment, not code


@triton.jit
def saxpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, a * x + y, mask=mask)


def saxpy(n: int, a: float, x: torch.Tensor, y: torch.Tensor, *, block: int = 256) -> dict[str, object]:
    out = torch.empty_like(y)
    grid = (triton.cdiv(n, block),)
    saxpy_kernel[grid](x, y, out, a, n, BLOCK=block)
    y.copy_(out)
    return {}
'''

CLEAN_TORCH_TRITON = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_rows(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    w = tl.load(w_ptr + cols[:, None] * BLOCK + cols[None, :])
    y = x[None, :] @ w
    s = y.sum(axis=0) + tl.max(x, axis=0)
    tl.store(out_ptr + row * n_cols + cols, 0.5 * s * (1 + tl.math.erf(s * 0.7071067811865476)), mask=cols < n_cols)


def gelu(x: torch.Tensor, w: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    out = torch.empty((rows, cols), device=x.device, dtype=torch.float32)
    x2 = x.contiguous().view(rows, cols).reshape(-1)
    gelu_rows[(rows,)](x2, w.to(x.device), out, cols, BLOCK=triton.next_power_of_2(cols))
    return out.view(x.shape[0], -1)
'''


@pytest.mark.parametrize(("text", "ctx"), [(CLEAN_CUDA, CUDA), (CLEAN_KOKKOS, KOKKOS), (CLEAN_TRITON, TRITON),
                                           (CLEAN_TORCH_TRITON, TORCH)], ids=["cuda", "kokkos", "triton", "torch"])
def test_clean_kernels_pass(text: str, ctx: CheatContext) -> None:
    assert check(text, ctx) == []


def test_violation_fields() -> None:
    text = "__global__ void k(float* y) {\n    y[0] = 1.0f;\n    clock64();\n}\n"
    [v] = check(text, CheatContext("cuda", ("k2",)))
    assert v == Violation("timing-trick", 3, "clock64();", v.reason)
    assert v.rule in RULES and "clock64" in v.reason


def test_unknown_target() -> None:
    with pytest.raises(ValueError, match="unknown target"):
        check("", CheatContext("opencl", ()))


# ------------------------------------------------------------------ calls-reference

def test_calls_reference_cuda() -> None:
    text = """\
extern "C" void saxpy_(int* n, float* a, const float* x, float* y);  // CHEAT: declares the Fortran symbol
cudaError_t saxpy_cuda(int n, float a, const float* x, float* y, cudaStream_t stream) {
    saxpy_loop1<<<1, 256, 0, stream>>>(n, a, x, y);
    kt_saxpy(n, a, x, y);
    SAXPY_(&n, &a, x, y);  // CHEAT: case-insensitive Fortran name
    kt_ref_saxpy(n, a, x, y);  // CHEAT: the validation's wrapper
    return cudaSuccess;
}
"""
    assert_caught(text, CUDA, "calls-reference")


def test_calls_reference_kokkos() -> None:
    text = """\
#include <dlfcn.h>  // CHEAT
void saxpy(int n, double a, const double* x, double* y) {
    if (n > 1) { saxpy(n / 2, a, x, y); }  // recursion into its own definition
    void* lib = dlopen(nullptr, RTLD_NOW);  // CHEAT
    auto f = reinterpret_cast<void (*)(int*)>(dlsym(lib, "saxpy_"));  // CHEAT
    std::system("./reference");  // CHEAT
    ref::saxpy(n, a, x, y);  // CHEAT: qualified by something that is not a library
}
"""
    assert_caught(text, KOKKOS, "calls-reference")


def test_calls_reference_triton() -> None:
    text = """\
import numpy as np  # CHEAT
import ctypes  # CHEAT
from kernels.saxpy import ref_impl  # CHEAT: imports the reference module
import triton.language as tl


def saxpy(n, a, x, y):
    lib = ctypes.CDLL("libref.so")  # CHEAT
    y2 = np.asarray(x)
    lib.saxpy_(n, a, x, y)  # CHEAT
    eval("saxpy(n, a, x, y)")  # CHEAT
    return saxpy(n - 1, a, x, y) if n > 1 else {}
"""
    assert_caught(text, TRITON, "calls-reference")


def test_torch_compute_ops_only_when_replacing_torch() -> None:
    text = """\
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.functional import softmax  # CHEAT
from models.gelu import Model  # CHEAT


def gelu(x, w, out):
    out.copy_(torch.matmul(x, w))  # CHEAT
    y = F.gelu(x)  # CHEAT
    z = x.softmax(dim=-1).view(-1)  # CHEAT
    t = x @ w  # CHEAT
    m = Model()  # CHEAT
    m.forward(x)  # CHEAT
    layer = torch.nn.Linear(4, 4)  # CHEAT
    s = out.sum().item()  # CHEAT
    p = nn.functional.softmax(x, dim=0)  # CHEAT
    q = torch.Tensor.exp(x)  # CHEAT
    act = torch.relu  # CHEAT: aliased, called later
    buf = torch.zeros(16, device=x.device).reshape(4, 4).contiguous()
    n = x.numel() + x.stride(0) + x.shape[0]
    return out.to(x.device)
"""
    assert_caught(text, TORCH, "calls-reference")
    plain = CheatContext("triton", ("gelu",), replaces_torch=False)
    assert hits(text, plain) == {("calls-reference", 5)}  # importing the module is still a reference call


def test_torch_ops_in_cpp() -> None:
    text = ('#include <torch/extension.h>  // CHEAT\nvoid f(at::Tensor x) {  // CHEAT\n'
            '    auto y = torch::relu(x);  // CHEAT\n}\n')
    ctx = CheatContext("cuda", ("relu", "Model"), replaces_torch=True)
    assert_caught(text, ctx, "calls-reference")
    assert check(text, CheatContext("cuda", ("relu",))) == []


def test_own_names_and_library_calls_are_not_references() -> None:
    ctx = CheatContext("triton", ("argmax", "conv2d"))
    text = (
        "import torch\nimport triton.language as tl\n\n\n"
        "@triton.jit\ndef argmax_kernel(x, out):\n    tl.store(out, tl.argmax(tl.load(x), axis=0))\n\n\n"
        "def argmax(x, out):\n    argmax_kernel[(1,)](x, out)\n    kt_argmax(x)\n    argmax_triton(x)\n"
        "    out.copy_(torch.nn.functional.conv2d(x, x))\n    return {}\n"
    )
    assert check(text, ctx) == []
    assert check("std::max(a, b); KtMax()(a, b);", CheatContext("kokkos", ("max",))) == []
    assert check("x = 1", CheatContext("triton", ("kt_x", "x_cuda", ""))) == []


# ------------------------------------------------------------------ fallback

def test_fallback_cuda() -> None:
    text = """\
cudaError_t saxpy_cuda(int n, float a, const float* x, float* y, cudaStream_t stream) {
    try {  // CHEAT
        saxpy_kernel<<<1, 256, 0, stream>>>(n, a, x, y);
    } catch (...) {  // CHEAT
        return cudaErrorUnknown;
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        fprintf(stderr, "launch failed: %s\\n", cudaGetErrorString(e));
        saxpy_host(n, a, x, y);  // CHEAT
    } else {
        cpu_check(n);  // CHEAT
    }
    if (e) run_cpu(n, a, x, y);  // CHEAT
    return e;
}
"""
    assert_caught(text, CUDA, "fallback")


def test_fallback_kokkos() -> None:
    text = """\
void saxpy_kokkos(int n, double a, Kokkos::View<const double*> x, Kokkos::View<double*> y) {
    try {  // CHEAT
        Kokkos::parallel_for(n, KOKKOS_LAMBDA(const int i) { y(i) += a * x(i); });
    }
    catch (const std::exception& e) {  // CHEAT
        for (int i = 0; i < n; ++i) y(i) += a * x(i);
    }
    signal(SIGSEGV, handler);  // CHEAT
}
"""
    assert_caught(text, KOKKOS, "fallback")


def test_fallback_triton() -> None:
    text = """\
import torch


def saxpy(n, a, x, y):
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:  # CHEAT
        saxpy_kernel[(1,)](x, y, a, n, BLOCK=256)
    except Exception:  # CHEAT
        y += a * x
    if not x.is_cuda:  # CHEAT
        y += a * x
    return {}
"""
    assert_caught(text, TRITON, "fallback")


# ------------------------------------------------------------------ timing-trick

def test_timing_trick_cuda() -> None:
    text = """\
#include <cuda_runtime.h>
__device__ float g_partial[1024];  // CHEAT: survives between calls
static float* cached = nullptr;  // CHEAT
__constant__ float kCoeff[4];
__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
    long long t0 = clock64();  // CHEAT
    __nanosleep(100);  // CHEAT
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));  // CHEAT
}
cudaError_t saxpy_cuda(int n, float a, const float* x, float* y, cudaStream_t stream) {
    cudaStream_t mine;
    cudaStreamCreate(&mine);  // CHEAT
    cudaEvent_t ev;  // CHEAT
    saxpy_kernel<<<1, 256, 0, cudaStreamPerThread>>>(n, a, x, y);  // CHEAT
    cudaDeviceSynchronize();  // CHEAT
    cudaStreamSynchronize(0);  // CHEAT
    cudaStreamSynchronize(stream);
    int dev = 0;
    cudaGetDevice(&dev);
    cudaFuncSetAttribute(saxpy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);
    float* tmp = nullptr;
    cudaMallocAsync(&tmp, 4, stream);
    cudaFreeAsync(tmp, stream);
    return cudaSuccess;
}
"""
    assert_caught(text, CUDA, "timing-trick")


def test_timing_trick_kokkos() -> None:
    text = """\
#include <chrono>  // CHEAT
double last_result;  // CHEAT: a mutable file-scope variable
void saxpy_kokkos(int n, double a, Kokkos::View<const double*> x, Kokkos::View<double*> y) {
    static std::map<int, double> cache;  // CHEAT
    static constexpr int kBlock = 256;
    Kokkos::Timer timer;  // CHEAT
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // CHEAT
    Kokkos::fence();
}
"""
    assert_caught(text, KOKKOS, "timing-trick")


def test_timing_trick_triton() -> None:
    text = """\
import functools
import time  # CHEAT
import torch

_results = {}  # CHEAT
CONFIGS = [1, 2, 4]


@functools.lru_cache(maxsize=None)  # CHEAT
def _cached(n):
    return n


def saxpy(n, a, x, y, _memo={}):  # CHEAT
    global _last  # CHEAT
    t0 = time.perf_counter()  # CHEAT
    torch.cuda.synchronize()  # CHEAT
    with torch.cuda.stream(torch.cuda.Stream()):  # CHEAT
        pass
    return {}
"""
    assert_caught(text, TRITON, "timing-trick")


# ------------------------------------------------------------------ hard-coded-shape

@pytest.mark.parametrize(("text", "ctx"), [
    ("__global__ void k(float* y) {\n    int i = threadIdx.x;\n    if (i < 4000) y[i] = 0;  // CHEAT\n}\n", CUDA),
    ("void f(Kokkos::View<double*> y) {\n    Kokkos::parallel_for(Kokkos::RangePolicy<>(0, 4'000),  // CHEAT\n"
     "        KOKKOS_LAMBDA(int i) { y(i) = 0; });\n}\n", KOKKOS),
    ("import triton\n\n\ndef saxpy(x, y):\n    grid = (triton.cdiv(4_000, 256),)  # CHEAT\n    n = 0xFA0  # CHEAT\n"
     "    return {}\n", TRITON),
], ids=["cuda", "kokkos", "triton"])
def test_hard_coded_shape(text: str, ctx: CheatContext) -> None:
    assert_caught(text, ctx, "hard-coded-shape")


def test_small_sizes_and_block_sizes_are_not_shapes() -> None:
    text = "__global__ void k(float* y) {\n    __shared__ float s[256];\n    y[12] = s[1024 - 12] + 4000.5f;\n}\n"
    assert check(text, CheatContext("cuda", ("k2",), sizes=(12, 256, 1024, 4000))) == []
    assert hits(text.replace("1024", "1000"), CheatContext("cuda", ("k2",), sizes=(1000,))) == {("hard-coded-shape", 3)}


# ------------------------------------------------------------------ hard-coded-output

def test_hard_coded_output_cuda() -> None:
    values = ", ".join(f"{i}.5f" for i in range(20))
    text = f"""\
__constant__ float kExpected[20] = {{{values}}};  // CHEAT
__constant__ float kTaps[5] = {{0.1f, 0.2f, 0.4f, 0.2f, 0.1f}};
void load(float* y) {{
    FILE* f = fopen("expected.bin", "rb");  // CHEAT (twice: fopen and the data-file name)
    const char* mode = getenv("KT_MODE");  // CHEAT
}}
"""
    assert_caught(text, CUDA, "hard-coded-output")


def test_hard_coded_output_kokkos() -> None:
    text = """\
#include <fstream>  // CHEAT
void saxpy_kokkos(int n, double a, Kokkos::View<const double*> x, Kokkos::View<double*> y) {
    std::ifstream in(R"(/tmp/golden_y)");  // CHEAT
    const double table[] = {
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10,  // CHEAT: the list starts here
        11, 12, 13, 14, 15, 16, 17, 18};
}
"""
    assert_caught(text, KOKKOS, "hard-coded-output")


def test_hard_coded_output_triton() -> None:
    numbers = " ".join(str(i / 7) for i in range(20))
    text = f"""\
import os

import torch

EXPECTED = [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2],  # CHEAT
            [1.3, 1.4, 1.5, 1.6], [1.7, 1.8, 1.9, 2.0]]
PACKED = "{numbers}"  # CHEAT: numbers hidden in a string


def saxpy(n, a, x, y):
    y.copy_(torch.load("out.pt"))  # CHEAT
    with open(os.environ["KT_DIR"] + "/y.txt") as f:  # CHEAT
        pass
    return {{}}
"""
    assert_caught(text, TRITON, "hard-coded-output")


# ------------------------------------------------------------------ lexing

def test_comments_and_strings_do_not_trigger() -> None:
    cpp = """\
// cudaEventRecord(start); try { ifstream x; } static int cache; saxpy_(&n); 4000
/* multi-line comment:
   dlopen("libref.so"); clock64(); getenv("X"); 4000 */
void f(int n) {
    printf("try { saxpy_(n) } catch (...) clock64() %d of 4000 static\\n", n);  // dlopen
    const char c = '"';
    const char* s = "\\" still a string: saxpy_(1) ";
    const char* r = R"x( raw: cudaDeviceSynchronize() ")x";
    int big = 1'000'000;
}
"""
    assert check(cpp, CheatContext("cuda", ("saxpy",), sizes=(4000,))) == []
    py = '''\
"""Module doc: import time; torch.matmul(a, b); try: saxpy(x) except: 4000"""
# import numpy as np; open("y.npy")
s = f"time.sleep(1) {1}"
t = """
try:
    saxpy(n)
except Exception:
    pass
"""
'''
    assert check(py, CheatContext("triton", ("saxpy",), sizes=(4000,), replaces_torch=True)) == []


def test_unterminated_python_still_checks_the_start() -> None:
    text = 'import time\nx = """never closed\n'
    assert hits(text, TRITON) == {("timing-trick", 1)}


# ------------------------------------------------------------------ the repository's own generated code

def _generated_files() -> list[Path]:
    return sorted(p for t in ("cuda", "kokkos", "triton") for p in ROOT.glob(f"examples/*/out/*/{t}/*")
                  if p.suffix in (".cu", ".cpp", ".py"))


def _workflow_sizes() -> dict[Path, tuple[int, ...]]:
    """By output folder of the example workflows (the repository's workflows.yaml, which
    scripts/run-examples runs, and each example's own): every integer under a ``sizes:`` key of
    that workflow (its regions' too), the sizes the tool's own gate checks a region's candidate
    against."""

    def walk(node: object, in_sizes: bool, found: set[int]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, in_sizes or key == "sizes", found)
        elif isinstance(node, list):
            for value in node:
                walk(value, in_sizes, found)
        elif in_sizes and isinstance(node, int) and not isinstance(node, bool):
            found.add(node)

    out: dict[Path, tuple[int, ...]] = {}
    for file in [ROOT / "workflows.yaml", *sorted(ROOT.glob("examples/*/workflows.yaml"))]:
        for name, workflow in yaml.safe_load(file.read_text())["workflows"].items():
            found: set[int] = set()
            walk(workflow, False, found)
            folder = file.parent / workflow.get("root", ".") / workflow.get("output", f"out/{name}")
            out[folder.resolve()] = tuple(sorted(found))
    return out


def _context(path: Path, sizes: dict[Path, tuple[int, ...]], replaces_torch: bool = False) -> CheatContext:
    routine = re.sub(r"_(cuda|kokkos|triton)$", "", path.stem)
    torch_region = (path.parents[1] / "pytorch").is_dir()
    names = (routine, "Model") if torch_region else (routine,)
    return CheatContext(path.parent.name, names, sizes[path.parents[1].resolve()], replaces_torch)


GENERATED = _generated_files()


@pytest.mark.skipif(not GENERATED, reason="no generated example outputs in this checkout")
def test_generated_files_pass() -> None:
    sizes = _workflow_sizes()
    failures = {str(p.relative_to(ROOT)): check(p.read_text(), _context(p, sizes)) for p in GENERATED}
    assert {k: v for k, v in failures.items() if v} == {}


@pytest.mark.skipif(not GENERATED, reason="no generated example outputs in this checkout")
def test_generated_torch_files_flag_only_declared_library_calls() -> None:
    """With replaces_torch the only findings in the PyTorch regions' generated files are the library calls
    (torch.matmul through cuBLAS, torch.nn.functional.conv2d through cuDNN) that the compiler declares in
    the file's header; an LLM-written kernel may not make them."""
    torch_files = [p for p in GENERATED if (p.parents[1] / "pytorch").is_dir()]
    if not torch_files:
        pytest.skip("no generated PyTorch example outputs in this checkout")
    sizes = _workflow_sizes()
    for path in torch_files:
        text = path.read_text()
        library_lines = {i for i, line in enumerate(text.split("\n"), 1)
                         if re.match(r"\s*(\w+\.copy_\()?torch\.(matmul|nn\.functional\.conv2d)\(", line)}
        assert not library_lines or "# Library call:" in text
        found = check(text, _context(path, sizes, replaces_torch=True))
        assert {(v.rule, v.line) for v in found} == {("calls-reference", i) for i in library_lines}, (path, found)
