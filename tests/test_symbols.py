"""The symbol check (validation.symbols): what a compiled candidate calls decides, not its
spelling. Each hand-declared, macro-pasted or otherwise disguised call outside the runtime is
refused with what it is; an honest kernel passes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from translate import ir
from validation import builds, runners, symbols

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("nm") is None, reason="needs g++ and nm")

HONEST = """#include <cmath>
#include <cstdio>
#include <vector>
extern "C" void timer_begin_(int*) __attribute__((weak));
extern "C" void kt_f(int n, double* x) {
  std::vector<double> t(n);
  int one = 1;
  if (timer_begin_) timer_begin_(&one);
  for (int i = 0; i < n; ++i) t[i] = std::sqrt(std::fabs(x[i])) + std::exp(x[i]);
  for (int i = 0; i < n; ++i) x[i] = t[i];
  if (n < 0) std::fprintf(stderr, "bad n\\n");
}
"""

# each: (the C++ body, what the refusal must say)
EVIL = {
    "python": ('extern "C" int PyRun_SimpleString(const char*);\n'
               'extern "C" void kt_f(int n, double* x) { PyRun_SimpleString("import os"); }', "Python C API"),
    "pasted_system": ('#define CAT(a, b) a##b\nextern "C" int CAT(sys, tem)(const char*);\n'
                      'extern "C" void kt_f(int n, double* x) { CAT(sys, tem)("true"); }', "running processes"),
    "weak_system": ('extern "C" int system(const char*) __attribute__((weak));\n'
                    'extern "C" void kt_f(int n, double* x) { if (system) system("true"); }', "running processes"),
    "driver": ('typedef struct CUstream_st* CUstream;\nextern "C" int cuStreamCreate(CUstream*, unsigned);\n'
               'extern "C" void kt_f(int n, double* x) { CUstream s; cuStreamCreate(&s, 0); }', "CUDA driver API"),
    "dlopen": ('extern "C" void* dlopen(const char*, int);\n'
               'extern "C" void kt_f(int n, double* x) { dlopen("libpython3.so", 1); }', "dynamic loading"),
    "thread": ('#include <thread>\nextern "C" void kt_f(int n, double* x) { std::thread t([]{}); t.join(); }',
               "threads or clocks"),
    "clock": ('#include <chrono>\nextern "C" void kt_f(int n, double* x) {\n'
              '  x[0] = std::chrono::steady_clock::now().time_since_epoch().count(); }', "threads or clocks"),
    "file": ('#include <cstdio>\nextern "C" void kt_f(int n, double* x) {\n'
             '  FILE* f = std::fopen("golden/case0.npz", "rb"); if (f) std::fread(x, 8, n, f); }',
             "files or the environment"),
    "getenv": ('#include <cstdlib>\nextern "C" void kt_f(int n, double* x) { x[0] = !!std::getenv("OPENAI_API_KEY"); }',
               "files or the environment"),
    "socket": ('extern "C" int socket(int, int, int);\nextern "C" void kt_f(int n, double* x) { socket(2, 1, 0); }',
               "the network"),
    "blas": ('extern "C" void dgemm_(...) __attribute__((weak));\n'
             'extern "C" void kt_f(int n, double* x) { if (dgemm_) dgemm_(); }', "not part of the target's runtime"),
}


def _object(tmp_path: Path, name: str, text: str) -> Path:
    src = tmp_path / f"{name}.cpp"
    src.write_text(text)
    subprocess.run(["g++", "-std=c++17", "-O2", "-fPIC", "-c", str(src), "-o", str(tmp_path / f"{name}.o")],
                   check=True, capture_output=True)
    return tmp_path / f"{name}.o"


@needs_gxx
def test_an_honest_kernel_passes(tmp_path: Path) -> None:
    assert symbols.check_object(_object(tmp_path, "honest", HONEST), ["timer_begin_"]) == []
    # the weak reference is allowed only for a routine the region's host code calls
    refused = symbols.check_object(_object(tmp_path, "honest2", HONEST))
    assert len(refused) == 1 and refused[0].startswith("`timer_begin_` (")


@needs_gxx
@pytest.mark.parametrize("name", sorted(EVIL))
def test_disguised_calls_are_refused(tmp_path: Path, name: str) -> None:
    text, why = EVIL[name]
    refused = symbols.check_object(_object(tmp_path, name, text))
    assert refused and any(why in r for r in refused), refused


KERNEL = ir.Kernel("evil", (ir.Scalar("n", ir.DType.I32),
                            ir.Array("x", ir.DType.F64, (ir.Var("n", ir.DType.I32),), intent=ir.Intent.INOUT)),
                   (), (), ir.Origin("evil.f", 1))


@needs_gxx
def test_a_kokkos_build_that_calls_python_fails_with_the_rule(tmp_path: Path) -> None:
    if runners.toolchains.find_kokkos() is None:
        pytest.skip("needs Kokkos")
    (tmp_path / "evil_kokkos.cpp").write_text(EVIL["python"][0].replace("kt_f", "kt_evil"))
    b = builds.build_candidate("kokkos", tmp_path, KERNEL, tmp_path / "cache", check_symbols=True)
    assert not b.ok and b.status == "failed"
    assert b.reason.startswith("symbol check: the compiled code calls what a kernel may not: `PyRun_SimpleString`")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_compilers_cub_scans_build_unchecked_and_an_answer_using_them_is_refused(tmp_path: Path) -> None:
    """CUB's device scans reference dlopen, dlsym and getenv through the library's headers: the
    compiler's own output builds (it is not held to the check); the same file as an LLM's
    answer is refused, naming them."""
    (tmp_path / "evil_cuda.cu").write_text(
        '#include <cub/device/device_scan.cuh>\n'
        'extern "C" void kt_evil(int n, double* x) {\n'
        '  size_t bytes = 0;\n'
        '  cub::DeviceScan::InclusiveSum(nullptr, bytes, x, x, n);\n'
        '}\n')
    assert builds.build_candidate("cuda", tmp_path, KERNEL, tmp_path / "cache").ok
    b = builds.build_candidate("cuda", tmp_path, KERNEL, tmp_path / "cache", check_symbols=True)
    assert not b.ok and "`dlopen` (dynamic loading)" in b.reason
