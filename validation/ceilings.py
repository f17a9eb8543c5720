"""The machine's measured ceilings: copy bandwidth and floating-point rates, measured
once and cached per device in ``$KT_CACHE_DIR`` (else ``$KT_CACHE``, else
``~/.cache/kernel-translate``) as ``ceilings-<device slug>.json`` (docs/ARCHITECTURE.md,
"Profiling and optimization"). Copy bandwidth counts bytes read plus written.

GPU: copy = ``dst.copy_(src)`` of 2 GiB fp32; fp32/fp64 = a Triton kernel of
independent register FMA chains ``a = a * b + c`` (2 flops each) over enough
programs to fill every SM; gemm = ``torch.matmul`` at 8192^3 (fp32 without TF32).

CPU: copy = ``np.copyto`` of 512 MiB. An elementwise ``a * b + c`` is memory bound
on a CPU, so fp32/fp64 are the rates of a numpy (BLAS) matmul at 2048^3, the same
numbers as the gemm fields. Sizes are keyword arguments so tests can shrink them.
"""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from validation.fma_kernel import FMA_CHAINS, fma_chains
from validation.runners import default_cache_dir
from validation.timing import time_cpu, time_gpu

Kind = Literal["gpu", "cpu"]
FMA_UNROLL = 8  # FMAs per chain per loop trip of validation.fma_kernel.fma_chains


@dataclass(frozen=True)
class Ceilings:
    device: str
    copy_gbps: float  # GB/s, bytes read + written
    fp32_gflops: float
    fp64_gflops: float
    gemm_fp32_gflops: float
    gemm_fp64_gflops: float
    measured_at: str  # ISO 8601, UTC
    method: str = ""  # how the numbers were measured

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Ceilings:
        data = json.loads(text)
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except (AttributeError, TypeError) as exc:
            raise ValueError(f"not a ceilings JSON object: {exc}") from exc


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _cuda_available() -> bool:
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    return bool(torch.cuda.is_available())


def resolve(device: str = "auto") -> Kind:
    """``auto`` is the GPU where torch sees one, else the CPU."""
    if device == "cpu":
        return "cpu"
    if device not in ("auto", "gpu"):
        raise ValueError(f"device must be auto, gpu or cpu, not {device!r}")
    if _cuda_available():
        return "gpu"
    if device == "gpu":
        raise RuntimeError("no CUDA GPU: torch.cuda.is_available() is False")
    return "cpu"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(kind: Kind) -> str:
    if kind == "gpu":
        import torch  # deferred: torch takes seconds to import; only the paths that use it pay

        return str(torch.cuda.get_device_name())
    return f"cpu:{_cpu_model() or 'unknown'} x{os.cpu_count() or 1}"


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"


def cache_dir() -> Path:
    """``$KT_CACHE_DIR``, else the validation cache root (``runners.default_cache_dir``)."""

    env = os.environ.get("KT_CACHE_DIR")
    return Path(env) if env else default_cache_dir()


def cache_path(device: str) -> Path:
    """The cache file of a device name (as :func:`device_name` gives it)."""
    return cache_dir() / f"ceilings-{slug(device)}.json"


def load_cached(device: str) -> Ceilings | None:
    path = cache_path(device)
    try:
        found = Ceilings.from_json(path.read_text())
    except (OSError, ValueError):
        return None
    return found if found.device == device else None


def save(ceilings: Ceilings) -> Path:
    path = cache_path(ceilings.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(ceilings.to_json() + "\n")
    os.replace(tmp, path)
    return path


def _np_gemm_gflops(n: int, dtype: type[np.floating[Any]], min_time_s: float) -> float:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    out = np.empty((n, n), dtype=dtype)
    t = time_cpu(lambda: np.matmul(a, b, out=out), min_time_s=min_time_s)
    return 2.0 * n**3 / t.median_s / 1e9


def measure_cpu(*, copy_bytes: int = 512 << 20, gemm_n: int = 2048, min_time_s: float = 0.2) -> Ceilings:
    src = np.ones(max(copy_bytes // 4, 1), dtype=np.float32)
    dst = np.empty_like(src)
    t = time_cpu(lambda: np.copyto(dst, src), min_time_s=min_time_s)
    g32 = _np_gemm_gflops(gemm_n, np.float32, min_time_s)
    g64 = _np_gemm_gflops(gemm_n, np.float64, min_time_s)
    method = (f"numpy {np.__version__}: np.copyto of {src.nbytes} B (read + written); "
              f"fp32/fp64 = numpy matmul {gemm_n}^3 (elementwise FMA is memory bound on a CPU)")
    return Ceilings(device_name("cpu"), 2 * src.nbytes / t.median_s / 1e9, g32, g64, g32, g64, _now(), method)


def _gpu_copy_gbps(nbytes: int, reps: int) -> float:
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    src = torch.ones(max(nbytes // 4, 1), dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    return 2.0 * src.numel() * 4 / time_gpu(lambda: dst.copy_(src), warmup=2, reps=reps).median_s / 1e9


def _gpu_fma_gflops(dtype: Any, programs: int, block: int, iters: int, reps: int) -> float:
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay


    x = torch.rand(programs * block, dtype=dtype, device="cuda")
    bc = torch.tensor([0.999999, 1e-6], dtype=dtype, device="cuda")
    out = torch.empty_like(x)

    def launch() -> object:
        return fma_chains[(programs,)](x, bc, out, iters, BLOCK=block, UNROLL=FMA_UNROLL)

    flops = 2.0 * x.numel() * FMA_CHAINS * FMA_UNROLL * iters
    return flops / time_gpu(launch, warmup=2, reps=reps).median_s / 1e9


def _gpu_gemm_gflops(dtype: Any, n: int, reps: int) -> float:
    """torch.matmul n^3 (the caller turns TF32 off)."""
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    a, b = (torch.randn(n, n, dtype=dtype, device="cuda") for _ in range(2))
    c = torch.empty_like(a)
    return 2.0 * n**3 / time_gpu(lambda: torch.matmul(a, b, out=c), warmup=2, reps=reps).median_s / 1e9


def measure_gpu(*, copy_bytes: int = 2 << 30, gemm_n: int = 8192, fma_iters: int = 4096,
                programs_per_sm: int = 8, block: int = 256, reps: int = 10) -> Ceilings:
    import torch  # deferred: torch takes seconds to import; only the paths that use it pay

    copy = _gpu_copy_gbps(copy_bytes, reps)
    programs = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count * programs_per_sm
    import triton  # deferred: imports torch


    f32, f64 = (_gpu_fma_gflops(dt, programs, block, fma_iters, reps) for dt in (torch.float32, torch.float64))
    matmul = torch.backends.cuda.matmul
    allow_tf32 = matmul.allow_tf32
    matmul.allow_tf32 = False
    try:
        g32, g64 = (_gpu_gemm_gflops(dt, gemm_n, reps) for dt in (torch.float32, torch.float64))
    finally:
        matmul.allow_tf32 = allow_tf32
    torch.cuda.empty_cache()
    method = (f"torch {torch.__version__}, triton {triton.__version__}: copy_ of {copy_bytes} B (read + written); "
              f"fp32/fp64 = Triton FMA chains, {programs} programs x {block} lanes x {FMA_CHAINS} chains x "
              f"{fma_iters * FMA_UNROLL} FMAs; gemm = torch.matmul {gemm_n}^3, no TF32")
    return Ceilings(device_name("gpu"), copy, f32, f64, g32, g64, _now(), method)


def load_or_measure(remeasure: bool = False, device: str = "auto") -> Ceilings:
    """The cached ceilings of this machine's GPU (or CPU), measuring and caching them
    when there are none or ``remeasure`` is set."""
    kind = resolve(device)
    if not remeasure:
        cached = load_cached(device_name(kind))
        if cached is not None:
            return cached
    found = measure_gpu() if kind == "gpu" else measure_cpu()
    save(found)
    return found


def format_ceilings(c: Ceilings, path: Path | None = None) -> str:
    rows = [("copy", c.copy_gbps, "GB/s (read + written)"), ("fp32", c.fp32_gflops, "GFLOP/s"),
            ("fp64", c.fp64_gflops, "GFLOP/s"), ("gemm fp32", c.gemm_fp32_gflops, "GFLOP/s"),
            ("gemm fp64", c.gemm_fp64_gflops, "GFLOP/s")]
    lines = [f"ceilings of {c.device} (measured {c.measured_at})"]
    lines += [f"  {name:<10} {value:>12,.1f}  {unit}" for name, value, unit in rows]
    if c.method:
        lines.append(f"  how: {c.method}")
    if path is not None:
        lines.append(f"  cached in {path}")
    return "\n".join(lines)
