"""Timing the reference and the candidates of one region on one case, and the
rates they reach against the machine's ceilings (docs/ARCHITECTURE.md, "Profiling and
optimization").

* GPU (CUDA, Triton): the arrays are put on the device once; each timed call is
  only the launch of the generated code (:func:`validation.timing.time_gpu`: CUDA
  events, warm-up, L2 flushed between runs, median). CUDA runs its launcher
  ``NAME_cuda(..., stream)`` on device pointers through a small ``extern "C"``
  entry compiled next to the generated file (the ``kt_`` shim would time the
  host copies too).
* CPU (the f2py reference, Kokkos through its ``kt_`` shim on host arrays):
  :func:`validation.timing.time_cpu` (``perf_counter``, median).

Repeated calls update inout arrays in place (``y = y + a*x`` grows): the values
drift, the work does not.

:func:`rates` turns a time and the region's :class:`validation.costs.Work` into
GB/s, GFLOP/s and the fraction of the roofline: the time the machine's ceilings
allow (bytes at the copy bandwidth or flops at the FMA rate of the region's
precision, whichever takes longer) over the time measured.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from targets.cuda import CudaRenderer
from translate import ir
from validation import worker
from validation.builds import build_candidate, candidate_file, compile_cached, nvcc_command
from validation.ceilings import Ceilings
from validation.costs import Work
from validation.inputs import Case
from validation.signature import signature
from validation.timing import Timing, time_cpu, time_gpu


@dataclass(frozen=True)
class Rates:
    time_s: float
    gbps: float
    gflops: float
    fraction_of_peak: float | None  # None without ceilings
    bound: str  # "memory" or "compute": which ceiling the roofline applies

    def as_dict(self) -> dict[str, Any]:
        return {"time_s": self.time_s, "gbps": self.gbps, "gflops": self.gflops,
                "fraction_of_peak": self.fraction_of_peak, "bound": self.bound}


def precision(kernel: ir.Kernel) -> str:
    """"fp64" when any floating array is f64, else "fp32" (the FMA ceiling that applies)."""
    return "fp64" if any(a.dtype is ir.DType.F64 for a in kernel.arrays) else "fp32"


def rates(work: Work, seconds: float, ceilings: Ceilings | None, prec: str = "fp64") -> Rates:
    gbps = work.bytes / seconds / 1e9 if seconds > 0 else 0.0
    gflops = work.flops / seconds / 1e9 if seconds > 0 else 0.0
    if ceilings is None or seconds <= 0:
        return Rates(seconds, gbps, gflops, None, "memory")
    peak = ceilings.fp64_gflops if prec == "fp64" else ceilings.fp32_gflops
    t_mem = work.bytes / (ceilings.copy_gbps * 1e9)
    t_fp = work.flops / (peak * 1e9) if peak > 0 else 0.0
    return Rates(seconds, gbps, gflops, max(t_mem, t_fp) / seconds, "memory" if t_mem >= t_fp else "compute")


# ------------------------------------------------------------------ CPU


def time_reference(lib_dir: Path, module: str, kernel: ir.Kernel, sig: dict[str, Any], scalars: dict[str, Any],
                   arrays: dict[str, np.ndarray], min_time_s: float = 0.2, reps: int = 5) -> Timing:
    """The f2py reference (``kt_ref_NAME`` of ``module`` in ``lib_dir``), in this process."""
    job = {"lib_dir": str(lib_dir), "module": module, "entry": f"kt_ref_{kernel.name.lower()}", "sig": sig}
    worker._prepare(sig, arrays)
    return time_cpu(lambda: worker.run_reference(job, scalars, arrays), warmup=1, reps=reps, min_time_s=min_time_s)


def time_shim(lib: Path, kernel: ir.Kernel, sig: dict[str, Any], scalars: dict[str, Any],
              arrays: dict[str, np.ndarray], min_time_s: float = 0.2, reps: int = 5) -> Timing:
    """A ``kt_NAME`` C shim on host arrays (Kokkos), in this process."""
    job = {"lib": str(lib), "entry": f"kt_{kernel.name.lower()}", "sig": sig}
    worker._prepare(sig, arrays)
    return time_cpu(lambda: worker.run_ctypes(job, scalars, arrays), warmup=1, reps=reps, min_time_s=min_time_s)


# ------------------------------------------------------------------ GPU


def _device_arrays(sig: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    out = {}
    for p in sig["params"]:
        if p["kind"] == "array":
            flat = arrays[p["name"]].reshape(-1, order=worker._order(p))
            out[p["name"]] = torch.from_numpy(np.ascontiguousarray(flat)).to("cuda")
    return out


DeviceCall = tuple[Callable[[], object], dict[str, Any]]  # the call and the device arrays it works on


def triton_call(launcher: Path, kernel: ir.Kernel, sig: dict[str, Any], scalars: dict[str, Any],
                arrays: dict[str, np.ndarray]) -> DeviceCall:
    """The Triton launcher bound to device copies of the arrays: a call launches the kernels."""
    spec = importlib.util.spec_from_file_location(f"kt_profile_{launcher.stem}", launcher)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, kernel.name.lower())
    dev = _device_arrays(sig, arrays)
    args = [dev[p["name"]] if p["kind"] == "array" else worker._scalar_py(scalars[p["name"]], p["dtype"])
            for p in sig["params"]]
    return (lambda: fn(*args)), dev


def cuda_entry_source(cu_file: Path, kernel: ir.Kernel, sig: dict[str, Any]) -> str:
    """An ``extern "C"`` entry ``kt_dev_NAME`` that calls the launcher on device
    pointers on the default stream and returns the ``cudaError_t`` as an int."""
    name = kernel.name.lower()
    params, args = [], []
    for p in sig["params"]:
        ctype = CudaRenderer.TYPES[ir.DType(p["dtype"])]  # the launcher's own parameter types
        if p["kind"] == "array":
            params.append(f"void* {p['name']}")
            args.append(f"static_cast<{ctype}*>({p['name']})")
        elif p["intent"] == "in":
            params.append(f"{ctype} {p['name']}")
            args.append(p["name"])
        else:
            params.append(f"{ctype}* {p['name']}")
            args.append(f"*{p['name']}")
    if sig["result"]:
        params.append(f"{CudaRenderer.TYPES[ir.DType(sig['result'])]}* kt_result")
        args.append("*kt_result")
    return (f'// Profiling entry for {name}_cuda (device pointers, default stream).\n'
            f'#include "{cu_file.resolve()}"\n\n'
            f'extern "C" int kt_dev_{name}({", ".join(params) or "void"}) {{\n'
            f"    return static_cast<int>({name}_cuda({', '.join([*args, '0'])}));\n}}\n")


def build_cuda_entry(cu_file: Path, kernel: ir.Kernel, sig: dict[str, Any], cache_dir: Path,
                     timeout: float = 600) -> Path:
    """Compile :func:`cuda_entry_source` with the flags the candidate was validated with
    (cached by content) and return the shared library."""
    src = cuda_entry_source(cu_file, kernel, sig)
    build = compile_cached("cuda-profile", nvcc_command("entry.cu", cu_file.parent),
                           src + cu_file.read_text(errors="replace"), cache_dir, timeout, {"entry.cu": src})
    if not build.ok or build.artifact is None:
        raise RuntimeError(f"nvcc failed for {cu_file.name}: {build.reason}")
    return build.artifact


def _arguments(sig: dict[str, Any], scalars: dict[str, Any], addresses: dict[str, int]) -> tuple[list[Any], list[Any]]:
    """A C entry's arguments and their ctypes: each array by the address given for it, each
    scalar as the worker passes it (by value, or by pointer for an output)."""
    args: list[Any] = []
    argtypes: list[Any] = []
    for p in sig["params"]:
        if p["kind"] == "array":
            args.append(ctypes.c_void_p(addresses[p["name"]]))
            argtypes.append(ctypes.c_void_p)
            continue
        ct = worker._CTYPES[p["dtype"]] if p["dtype"] != "bool" else ctypes.c_bool
        arg, argtype, _ = worker.scalar_arg(p, scalars[p["name"]], ct)
        args.append(arg)
        argtypes.append(argtype)
    return args, argtypes


def cuda_call(lib: Path, kernel: ir.Kernel, sig: dict[str, Any], scalars: dict[str, Any],
              arrays: dict[str, np.ndarray]) -> DeviceCall:
    """``kt_dev_NAME`` bound to device copies of the arrays: a call launches the kernels
    (returns the CUDA error code; 0 is success)."""
    dll = ctypes.CDLL(str(lib))
    fn = getattr(dll, f"kt_dev_{kernel.name.lower()}")
    dev = _device_arrays(sig, arrays)
    args, argtypes = _arguments(sig, scalars, {n: d.data_ptr() for n, d in dev.items()})
    if sig["result"]:
        res = worker._CTYPES[sig["result"]]()
        args.append(ctypes.byref(res))
        argtypes.append(ctypes.POINTER(worker._CTYPES[sig["result"]]))
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int

    def call() -> int:
        err = fn(*args)
        if err:
            raise RuntimeError(f"kt_dev_{kernel.name.lower()} returned CUDA error {err}")
        return err

    return call, dev


# The data-region entry a generated Kokkos shim looks for (weak ``kt_present``): here a table of
# host addresses standing for device buffers, so a profiled call runs its kernels on
# device-resident data with no copies, as inside a migrated program's data region.
PRESENT_TABLE_C = """\
#include <stddef.h>
#define KT_MAX 256
static const void* kt_host[KT_MAX];
static void* kt_dev[KT_MAX];
static size_t kt_bytes[KT_MAX];
static int kt_n;
void kt_profile_register(const void* host, void* dev, size_t bytes) {
    if (kt_n < KT_MAX) { kt_host[kt_n] = host; kt_dev[kt_n] = dev; kt_bytes[kt_n] = bytes; kt_n++; }
}
void kt_profile_clear(void) { kt_n = 0; }
void* kt_present(const void* host, size_t bytes, int writes) {
    (void)writes;
    for (int i = kt_n - 1; i >= 0; i--)
        if (kt_host[i] == host && bytes <= kt_bytes[i]) return kt_dev[i];
    return NULL;
}
"""


def present_table(cache_dir: Path, timeout: float = 120) -> ctypes.CDLL:
    """:data:`PRESENT_TABLE_C` built (cached) and loaded with its symbols global, so that a
    Kokkos library loaded after it binds its ``kt_present`` to the table."""
    build = compile_cached("kokkos-present", ["cc", "-O2", "-shared", "-fPIC", "present.c", "-o", "{out}"],
                           PRESENT_TABLE_C, cache_dir, timeout, {"present.c": PRESENT_TABLE_C})
    if not build.ok or build.artifact is None:
        raise RuntimeError(f"cc failed for the present table: {build.reason}")
    return ctypes.CDLL(str(build.artifact), mode=ctypes.RTLD_GLOBAL)


def kokkos_call(lib: Path, kernel: ir.Kernel, sig: dict[str, Any], scalars: dict[str, Any],
                arrays: dict[str, np.ndarray], cache_dir: Path, dev: dict[str, Any] | None = None) -> DeviceCall:
    """The ``kt_NAME`` shim of a Kokkos library built for a GPU backend, its arrays resident
    on the device (:func:`present_table`): a call launches the kernels and fences. ``dev``:
    the buffers to use instead of device copies of ``arrays`` (torch tensors, or numpy arrays
    for a host backend), laid out as the shim's arrays."""
    table = present_table(cache_dir)
    table.kt_profile_clear()
    dev = _device_arrays(sig, arrays) if dev is None else dev
    host = {p["name"]: arrays[p["name"]] for p in sig["params"] if p["kind"] == "array"}
    worker._prepare(sig, host)
    for name, a in host.items():
        d = dev[name]
        address = d.data_ptr() if hasattr(d, "data_ptr") else d.ctypes.data
        table.kt_profile_register(ctypes.c_void_p(a.ctypes.data), ctypes.c_void_p(address), ctypes.c_size_t(a.nbytes))
    fn = getattr(ctypes.CDLL(str(lib)), f"kt_{kernel.name.lower()}")
    args, argtypes = _arguments(sig, scalars, {n: a.ctypes.data for n, a in host.items()})
    fn.argtypes = argtypes
    fn.restype = worker._CTYPES[sig["result"]] if sig["result"] else None
    return (lambda: fn(*args)), dev


def time_on_gpu(call: Callable[[], object], reps: int = 30, budget_s: float = 3.0) -> Timing:
    """``time_gpu`` with the repetitions cut so that slow calls stay within about
    ``budget_s`` (at least 5 runs; a call over half the budget is timed once, by
    ``perf_counter`` around a synchronised call after a first, untimed one that
    compiles)."""

    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    call()  # the first call compiles (Triton JIT, module load): never part of a time
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    once = time.perf_counter() - t0
    if once > budget_s / 2:  # a call this slow is timed once: repeating it only costs device time
        return Timing.of([once])
    reps = max(5, min(reps, int(budget_s / max(once, 1e-6))))
    return time_gpu(call, warmup=1 if once > 0.05 else 3, reps=reps, flush_l2=True)


@dataclass(frozen=True)
class ProfileCase:
    """The inputs a region is timed on: the case, its signature, its work and its sizes."""

    case: Case
    sig: dict[str, Any]
    work: Work
    sizes: dict[str, int]


def gpu_call(target: str, files_dir: Path, kernel: ir.Kernel, pc: ProfileCase, cache_dir: Path) -> Callable[[], object]:
    """One call of the CUDA, Triton or (GPU-built) Kokkos code in ``files_dir`` on a
    device-resident copy of the profiling case (built, loaded and copied once; each call runs
    the kernels only)."""
    src = candidate_file(target, files_dir, kernel.name)
    if src is None:
        raise FileNotFoundError(f"no {target} file for {kernel.name} in {files_dir}")
    arrays = {k: v.copy() for k, v in pc.case.arrays.items()}
    if target == "cuda":
        lib = build_cuda_entry(src, kernel, signature(kernel), cache_dir)
        call, _ = cuda_call(lib, kernel, pc.sig, pc.case.scalars, arrays)
    elif target == "kokkos":  # a Kokkos built for the GPU (Kokkos_ROOT), the data resident there
        build = build_candidate("kokkos", files_dir, kernel, cache_dir)
        if not build.ok or build.artifact is None:
            raise RuntimeError(f"the Kokkos build failed: {build.reason}")
        call, _ = kokkos_call(build.artifact, kernel, pc.sig, pc.case.scalars, arrays, cache_dir)
    else:
        call, _ = triton_call(src, kernel, pc.sig, pc.case.scalars, arrays)
    return call

