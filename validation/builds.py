"""Build the candidates: a compiled target's generated source with the target's own
CMakeLists (the one users get), cached by hash.

Public API::

    candidate_file(target, files_dir, name) -> Path | None
    build_candidate(target, files_dir, kernel, cache_dir=None, timeout=600, check_symbols=False)
        -> CandidateBuild
    compile_cached(kind, cmd, text, cache_dir, timeout, files=None) -> CandidateBuild  (the tool's harnesses)
    nvcc_command(src, include) -> list[str]

A candidate is copied into a fresh folder next to its target's ``CMakeLists.txt``
(``TargetInfo.cmake``), configured (``-D<package_root>=`` and ``CMAKE_PREFIX_PATH`` from the
environment where set) and built with ``cmake --build``; both run in the sandbox where there
is one. The library lands at ``<cache>/<target>/<hash>/lib.so``. Code nobody has read (an
LLM's) has its objects' undefined symbols checked (:mod:`validation.symbols`) before the
library is published.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from targets import host_calls
from targets.base import TARGETS, TargetInfo
from targets.cmake import library_name
from translate import ir
from validation import sandbox, symbols, toolchains
from validation.processes import run_process, tail


@dataclass(frozen=True)
class CandidateBuild:
    ok: bool
    status: str  # "built" | "failed" | "unsupported" | "interpreted"
    reason: str = ""
    artifact: Path | None = None
    log: str = ""


def default_cache_dir() -> Path:
    return Path(os.environ.get("KT_CACHE", Path.home() / ".cache" / "kernel-translate"))


def content_hash(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:20]


def publish(tmp: Path, final: Path) -> None:
    """Move a finished build into place (another process may have won)."""
    try:
        tmp.rename(final)
    except OSError:
        if not final.exists() and tmp.exists():  # built on another file system: copied over
            try:
                shutil.move(str(tmp), str(final))
                return
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


def candidate_file(target: str, files_dir: Path, name: str) -> Path | None:
    ext = TARGETS[target].extension
    for d in (Path(files_dir), Path(files_dir) / target):
        for stem in (name, name.lower()):
            f = d / f"{stem}_{target}.{ext}"
            if f.exists():
                return f.resolve()
    return None


def build_candidate(target: str, files_dir: Path, kernel: ir.Kernel, cache_dir: Path | None = None,
                    timeout: float = 600, check_symbols: bool = False) -> CandidateBuild:
    """Build a compiled target's candidate into a shared library (cached by hash), or say
    where an interpreted one is. ``check_symbols`` (code nobody has read: an LLM's): every
    object's undefined symbols must pass :func:`validation.symbols.check_object`. The
    compiler's own output is not held to it: its CUB scans reference dlopen and getenv
    through the library's headers."""
    info = TARGETS.get(target)
    if info is None:
        return CandidateBuild(False, "unsupported", f"unknown target '{target}'")
    src = candidate_file(target, files_dir, kernel.name)
    if src is None:
        return CandidateBuild(False, "unsupported",
                              f"no {kernel.name.lower()}_{target}.{info.extension} in {files_dir}")
    if info.cmake is None:
        return CandidateBuild(True, "interpreted", "", src)
    extern_ok = sorted(host_calls.link_name(s) for s in _host_calls(kernel) if host_calls.callable_from_c(s)) \
        if check_symbols else None
    return cmake_cached(info, src, kernel.name.lower(), cache_dir, timeout, extern_ok)


def _host_calls(kernel: ir.Kernel) -> list[ir.HostCall]:
    return [n for s in kernel.body for n in ir.walk(s) if isinstance(n, ir.HostCall) and n.kind == "call"]


def configure_args(info: TargetInfo) -> list[str]:
    """What ``cmake`` is configured with beyond the project: where the target's runtime is
    installed (``<package_root>`` and ``CMAKE_PREFIX_PATH`` from the environment) and, for CUDA,
    the nvcc on PATH."""
    args = []
    if info.package_root and os.environ.get(info.package_root):
        args.append(f"-D{info.package_root}={os.environ[info.package_root]}")
    if os.environ.get("CMAKE_PREFIX_PATH"):
        args.append(f"-DCMAKE_PREFIX_PATH={os.environ['CMAKE_PREFIX_PATH']}")
    if "nvcc" in info.toolchain and shutil.which("nvcc"):
        args.append(f"-DCMAKE_CUDA_COMPILER={shutil.which('nvcc')}")
    if "kokkos" in info.toolchain and (k := toolchains.find_kokkos()) is not None and (cxx := k.cxx_compiler()):
        args.append(f"-DCMAKE_CXX_COMPILER={cxx}")  # a CUDA-backend Kokkos compiles with its nvcc_wrapper
    return args


def _tool_dirs(info: TargetInfo) -> list[Path]:
    """Folders outside the system's a build reads: the runtime's install, the CUDA toolkit
    (and where an nvcc wrapper script execs to)."""
    dirs = [Path(p) for var in (info.package_root, "CMAKE_PREFIX_PATH") if var and os.environ.get(var)
            for p in os.environ[var].split(os.pathsep) if p]
    kokkos = toolchains.find_kokkos() if "kokkos" in info.toolchain else None
    if ("nvcc" in info.toolchain or (kokkos is not None and kokkos.cxx_compiler())) and shutil.which("nvcc"):
        nvcc = Path(shutil.which("nvcc") or "nvcc").resolve()
        dirs += [nvcc.parent.parent, *map(Path, _nvcc_targets(nvcc))]
    if kokkos is not None:
        dirs += [Path(kokkos.include), Path(kokkos.lib_dir)]
        if cxx := kokkos.cxx_compiler():
            dirs.append(Path(cxx).parent)
    return [d for d in dict.fromkeys(dirs) if d.exists()]


def cmake_cached(info: TargetInfo, src: Path, name: str, cache_dir: Path | None, timeout: float,
                 extern_ok: Sequence[str] | None = None) -> CandidateBuild:
    """Configure and build ``src`` with the target's CMakeLists in a fresh folder, cached
    under ``<cache>/<target>/<hash>/lib.so``."""
    assert info.cmake is not None
    text = src.read_text(errors="replace")
    project = info.cmake(name, [src.name])
    config = configure_args(info)
    key = content_hash(info.name, text, project, *config, "checked" if extern_ok is not None else "",
                       *(extern_ok or []))
    cache = Path(cache_dir or default_cache_dir()).resolve() / info.name  # absolute: cmake runs elsewhere
    final = cache / key
    if (final / "lib.so").exists():
        return CandidateBuild(True, "built", "", final / "lib.so")
    probe = toolchains.Probe()  # asked on a miss only: each probe runs the tool
    missing = [probe.get(t) for t in info.toolchain if not probe.get(t).available]
    if missing:
        return CandidateBuild(False, "unsupported", "; ".join(f"{t.name}: {t.detail}" for t in missing)
                              + " (see translate doctor)")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
    source, build = tmp / "src", tmp / "build"
    source.mkdir()
    (source / src.name).write_text(text)
    (source / "CMakeLists.txt").write_text(project)
    steps = [("configure", ["cmake", "-S", str(source), "-B", str(build), *config]),
             ("build", ["cmake", "--build", str(build)])]
    outputs = []
    jail = sandbox.Jail(read_only=_tool_dirs(info), writable=[tmp], memory_bytes=None) \
        if sandbox.probe().available else None
    for what, step in steps:
        cwd: Path | None = tmp
        if jail is not None:
            step, cwd = sandbox.command(step, jail, cwd=tmp), None
        r = run_process(step, f"{info.name} {what}", timeout, cwd=cwd, exit_signals=True)
        outputs.append(r.output.replace(str(source / src.name), str(src)))  # messages name the user's file
        if not r.ok:
            shutil.rmtree(tmp, ignore_errors=True)
            return CandidateBuild(False, "failed", r.reason.replace(str(source / src.name), str(src)),
                                  log=tail("".join(outputs)))
    if extern_ok is not None:
        refused = _check_objects(sorted(build.rglob("*.o")), extern_ok)
        if refused:
            shutil.rmtree(tmp, ignore_errors=True)
            return CandidateBuild(False, "failed", "symbol check: the compiled code calls what a kernel may not: "
                                                   f"{'; '.join(refused)}")
    lib = build / f"lib{library_name(name, info.name)}.so"
    if not lib.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return CandidateBuild(False, "failed", f"cmake built no {lib.name}", log=tail("".join(outputs)))
    lib.rename(tmp / "lib.so")
    shutil.rmtree(build, ignore_errors=True)
    publish(tmp, final)
    return CandidateBuild(True, "built", "", final / "lib.so", tail("".join(outputs)))


def _check_objects(objects: list[Path], extern_ok: Sequence[str]) -> list[str]:
    if not objects:
        return ["the symbol check found no object file"]
    try:
        return [r for o in objects for r in symbols.check_object(o, extern_ok)]
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"the symbol check could not read the object: {exc}"]


def _nvcc_targets(nvcc: Path) -> list[str]:
    """Folders an nvcc wrapper script execs into (``exec /usr/local/cuda-13.0/bin/nvcc``)."""
    try:
        head = nvcc.read_bytes()[:2000].decode(errors="replace") if nvcc.stat().st_size < 100_000 else ""
    except OSError:
        return []
    return [str(Path(m).resolve().parent.parent) for m in re.findall(r"exec\s+(/\S+/bin/nvcc)\b", head)]


def nvcc_command(src: Path | str, include: Path) -> list[str]:
    """The nvcc line that builds a CUDA file into ``{out}`` (a shared library, sm_90 + PTX, the
    architectures the CUDA CMakeLists builds for): the profiler's harness, whose entry file
    the profiler writes around a candidate's source."""
    return ["nvcc", "-std=c++17", "-O3", "-Xcompiler", "-fPIC",
            "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90",
            f"-I{include}", str(src), "-shared", "-o", "{out}"]


def compile_cached(kind: str, cmd: list[str], text: str, cache_dir: Path | None, timeout: float,
                   files: dict[str, str] | None = None) -> CandidateBuild:
    """Run ``cmd`` (``{out}``: the library to make) in a fresh folder holding ``files``,
    cached under ``<cache>/<kind>/<hash of text and cmd>/lib.so``: the tool's own harnesses
    (the profiler's entry points), not candidates."""
    key = content_hash(kind, text, *cmd)
    cache = Path(cache_dir or default_cache_dir()).resolve() / kind  # absolute: the compiler runs elsewhere
    final = cache / key
    if (final / "lib.so").exists():
        return CandidateBuild(True, "built", "", final / "lib.so")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
    for name, content in (files or {}).items():
        (tmp / name).write_text(content)
    r = run_process([c.replace("{out}", str(tmp / "lib.so")) for c in cmd], f"{kind} compile", timeout, cwd=tmp)
    if not r.ok:
        shutil.rmtree(tmp, ignore_errors=True)
        return CandidateBuild(False, "failed", r.reason, log=tail(r.output))
    publish(tmp, final)
    return CandidateBuild(True, "built", "", final / "lib.so", tail(r.output))
