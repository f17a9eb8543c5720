"""Find and report the toolchains validation needs (for ``translate doctor``).

Nothing is cached at module level: :func:`detect` probes every time it is
called; a caller that probes repeatedly holds a :class:`Probe` and asks it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

KOKKOS_INCLUDE_DIRS = ("/usr/include/trilinos", "/usr/include/kokkos", "/usr/local/include", "/usr/include")
KOKKOS_LIBS = ("trilinos_kokkoscore", "kokkoscore")
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib", "/usr/lib64")


@dataclass(frozen=True)
class Toolchain:
    name: str
    available: bool
    version: str | None
    detail: str  # path, or why not


@dataclass(frozen=True)
class KokkosInfo:
    include: str
    lib: str  # the name to pass to -l
    lib_dir: str
    backends: tuple[str, ...]
    version: str

    @property
    def device(self) -> bool:
        """Whether its default execution space is a GPU (a CUDA, HIP or SYCL backend)."""
        return any(b in self.backends for b in ("Cuda", "Hip", "Sycl"))

    def cxx_compiler(self) -> str | None:
        """The compiler a code using this install must be built with: its ``nvcc_wrapper`` for a
        CUDA backend (the install's ``bin/``), else None (the system's C++ compiler)."""
        if "Cuda" not in self.backends:
            return None
        wrapper = Path(self.include).parent / "bin" / "nvcc_wrapper"
        return str(wrapper) if wrapper.is_file() else None


def _run(cmd: list[str], timeout: float = 30) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return p.returncode, (p.stdout + p.stderr)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def _compiler(name: str, exe: str, pattern: str) -> Toolchain:
    path = shutil.which(exe)
    if not path:
        return Toolchain(name, False, None, f"{exe} not found on PATH")
    rc, out = _run([path, "--version"])
    m = re.search(pattern, out)
    return Toolchain(name, rc == 0, m.group(1) if m else _first_line(out), path)


def gfortran() -> Toolchain:
    return _compiler("gfortran", os.environ.get("FC", "gfortran"), r"GNU Fortran[^\n]*?(\d+\.\d+\.\d+)")


def gxx() -> Toolchain:
    return _compiler("g++", os.environ.get("CXX", "g++"), r"g\+\+[^\n]*?(\d+\.\d+\.\d+)")


def cmake() -> Toolchain:
    return _compiler("cmake", "cmake", r"cmake version (\d+\.\d+\.\d+)")


def nvcc() -> Toolchain:
    return _compiler("nvcc", "nvcc", r"release (\d+\.\d+)")


def f2py() -> Toolchain:
    """numpy.f2py with the meson backend (meson and ninja next to the interpreter)."""
    try:
        import numpy  # deferred: probed here, as f2py's host package
    except ImportError:
        return Toolchain("f2py", False, None, "numpy is not importable")
    bindir = Path(sys.executable).parent
    missing = [t for t in ("meson", "ninja") if not ((bindir / t).exists() or shutil.which(t))]
    if missing:
        return Toolchain("f2py", False, numpy.__version__, f"numpy.f2py needs {', '.join(missing)} (not found)")
    if not shutil.which("gfortran"):
        return Toolchain("f2py", False, numpy.__version__, "numpy.f2py needs gfortran (not found)")
    return Toolchain("f2py", True, numpy.__version__, f"{sys.executable} -m numpy.f2py (meson backend)")


def find_kokkos() -> KokkosInfo | None:
    """The Kokkos install the candidates build against: ``$Kokkos_ROOT`` where set (as CMake
    reads it), else the first of the system's."""
    root = os.environ.get("Kokkos_ROOT")
    includes = (f"{root}/include", *KOKKOS_INCLUDE_DIRS) if root else KOKKOS_INCLUDE_DIRS
    lib_dirs = (f"{root}/lib", f"{root}/lib64", *LIB_DIRS) if root else LIB_DIRS
    for inc in includes:
        cfg = Path(inc) / "KokkosCore_config.h"
        if not cfg.exists():
            continue
        text = cfg.read_text(errors="replace")
        backends = tuple(
            b.capitalize() if b != "OPENMP" else "OpenMP"
            for b in ("SERIAL", "OPENMP", "THREADS", "CUDA", "HIP", "SYCL")
            if re.search(rf"#define\s+KOKKOS_ENABLE_{b}\b", text)
        )
        m = re.search(r"#define\s+KOKKOS_VERSION\s+(\d+)", text)
        version = "unknown"
        if m:
            v = int(m.group(1))
            version = f"{v // 10000}.{v // 100 % 100}.{v % 100}"
        for lib in KOKKOS_LIBS:
            for d in lib_dirs:
                if (Path(d) / f"lib{lib}.so").exists():
                    return KokkosInfo(inc, lib, d, backends, version)
    return None


def kokkos() -> Toolchain:
    info = find_kokkos()
    if info is None:
        return Toolchain("kokkos", False, None, "KokkosCore_config.h or libkokkoscore.so not found")
    detail = f"{info.include}, -l{info.lib} ({info.lib_dir}); backend: {', '.join(info.backends) or 'unknown'}"
    return Toolchain("kokkos", True, info.version, detail)


def cuda_gpu() -> Toolchain:
    smi = shutil.which("nvidia-smi")
    if smi:
        rc, out = _run([smi, "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if rc == 0 and out.strip():
            name, _, driver = _first_line(out).partition(",")
            return Toolchain("cuda-gpu", True, driver.strip() or None, name.strip())
    try:
        import torch  # deferred: torch takes seconds to import; only the paths that use it pay

        if torch.cuda.is_available():
            return Toolchain("cuda-gpu", True, torch.version.cuda, torch.cuda.get_device_name(0))
    except ImportError:
        pass
    return Toolchain("cuda-gpu", False, None, "no CUDA GPU (nvidia-smi absent or failing, torch.cuda unavailable)")


def triton(gpu: Toolchain | None = None) -> Toolchain:
    try:
        import triton as tr  # deferred: an optional package, probed here
    except ImportError as exc:
        return Toolchain("triton", False, None, f"not importable: {exc}")
    gpu = gpu if gpu is not None else cuda_gpu()
    mode = "GPU" if gpu.available else "CPU interpreter (TRITON_INTERPRET=1)"
    return Toolchain("triton", True, tr.__version__, mode)


def has_gpu() -> bool:
    return cuda_gpu().available


def detect() -> list[Toolchain]:
    gpu = cuda_gpu()
    return [gfortran(), f2py(), gxx(), cmake(), kokkos(), nvcc(), gpu, triton(gpu)]


@dataclass
class Probe:
    """Memoises probes for one caller (one validation run); not shared."""

    _seen: dict[str, Toolchain] = field(default_factory=dict)

    def get(self, name: str) -> Toolchain:
        if name not in self._seen:
            table = {"gfortran": gfortran, "f2py": f2py, "g++": gxx, "cmake": cmake, "kokkos": kokkos, "nvcc": nvcc,
                     "cuda-gpu": cuda_gpu, "triton": lambda: triton(self.get("cuda-gpu"))}
            self._seen[name] = table[name]()
        return self._seen[name]

    def gpu(self) -> bool:
        return self.get("cuda-gpu").available


def format_table(tools: list[Toolchain]) -> str:
    rows = [(t.name, "yes" if t.available else "no", t.version or "-", t.detail) for t in tools]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d}" for a, b, c, d in rows)


if __name__ == "__main__":
    print(format_table(detect()))
