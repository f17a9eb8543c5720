"""Build and run the reference and the candidates, each in a subprocess.

Public API::

    build_reference(sources, kernels, workdir, include=(), defines=None, cache_dir=None) -> ReferenceBuild
    run_reference(build, kernel, case, workdir, timeout=60) -> RunResult
    run_reference_cases(build, kernel, cases, workdir, timeout=60) -> list[RunResult]
    build_candidate(target, files_dir, kernel, cache_dir=None) -> CandidateBuild
    run_candidate(target, files_dir, kernel, case, workdir, cache_dir=None, timeout=60, gpu=None) -> RunResult
    run_candidate_cases(target, files_dir, kernel, cases, workdir, ...) -> list[RunResult]  (one process)

Every build and run is a child process with a time limit; its process group is
killed on timeout. Failures (compile errors, crashes, hangs, nonzero exits)
come back as results with ``ok=False`` and a reason, never as exceptions.
Data passes through ``.npz`` files in ``workdir``; builds are cached by hash
under ``cache_dir`` (default ``$KT_CACHE`` or ``~/.cache/kernel-translate``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from translate import ir
from validation import fwrapper, toolchains
from validation.inputs import Case
from validation.signature import signature

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_EXT = {"kokkos": "cpp", "cuda": "cu", "triton": "py"}
PREPROCESSED = (".F", ".F90", ".F95", ".F03", ".F08", ".fpp", ".FPP")
FREE_FORM = (".f90", ".f95", ".f03", ".f08")


@dataclass(frozen=True)
class ProcResult:
    ok: bool
    reason: str
    returncode: int | None
    output: str
    seconds: float


@dataclass(frozen=True)
class RunResult:
    ok: bool
    status: str  # "ran" | "compiled" (built, cannot run here) | "failed" | "unsupported"
    reason: str = ""
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0
    log: str = ""


@dataclass(frozen=True)
class ReferenceBuild:
    ok: bool
    reason: str
    lib_dir: Path | None = None
    module: str = ""
    log: str = ""
    cached: bool = False


@dataclass(frozen=True)
class CandidateBuild:
    ok: bool
    status: str  # "built" | "failed" | "unsupported" | "interpreted"
    reason: str = ""
    artifact: Path | None = None
    log: str = ""


def default_cache_dir() -> Path:
    return Path(os.environ.get("KT_CACHE", Path.home() / ".cache" / "kernel-translate"))


def _tail(text: str, n: int = 4000) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() and not ln.lower().startswith("ninja"):
            return ln[:300]
    return lines[-1][:300] if lines else "(no output)"


def run_process(cmd: list[str], what: str, timeout: float, cwd: Path | None = None,
                env: dict[str, str] | None = None, progress: Path | None = None) -> ProcResult:
    """Run ``cmd`` in its own process group; kill the whole group when it runs
    ``timeout`` seconds (since it started, or since ``progress`` last changed)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+", errors="replace") as log:
        try:
            p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            return ProcResult(False, f"{what} could not start: {exc}", None, "", 0.0)
        deadline, stamp = t0 + timeout, None
        timed_out = False
        while True:
            try:
                p.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            if progress is not None and progress.exists():
                mark = progress.stat().st_size
                if mark != stamp:
                    stamp, deadline = mark, time.perf_counter() + timeout
            if time.perf_counter() > deadline:
                timed_out = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
                break
        log.seek(0)
        out = log.read()
    dt = time.perf_counter() - t0
    rc = p.returncode
    if timed_out:
        return ProcResult(False, f"{what} timed out after {timeout:g} s", None, out, dt)
    if rc == 0:
        return ProcResult(True, "", 0, out, dt)
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
        extra = " (killed: out of memory?)" if -rc == signal.SIGKILL else ""
        return ProcResult(False, f"{what} crashed with signal {name}{extra}", rc, out, dt)
    return ProcResult(False, f"{what} failed (exit {rc}): {_last_error(out)}", rc, out, dt)


def _hash(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:20]


def _publish(tmp: Path, final: Path) -> None:
    """Move a finished build into place (another process may have won)."""
    try:
        tmp.rename(final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _py_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra or {})
    return env


# ----------------------------------------------------------------- reference


def _plain_signature(pyf: Path) -> None:
    """Keep only the wrappers' argument lists in f2py's signature file: the
    ``use`` and ``common`` lines it copies would make f2py expose the project's
    COMMON blocks through an extra wrapper that clashes with its modules."""
    lines = pyf.read_text().splitlines()
    keep = [ln for ln in lines if not re.match(r"\s*(use\s|common\s*/)", ln, re.IGNORECASE)]
    pyf.write_text("\n".join(keep) + "\n")


def build_reference(sources: list[Path], kernels: list[ir.Kernel], workdir: Path, include: list[Path] | tuple = (),
                    defines: dict[str, str] | None = None, cache_dir: Path | None = None,
                    flags: tuple[str, ...] = ("-O2",), timeout: float = 600) -> ReferenceBuild:
    """Compile ``sources`` with gfortran and f2py-wrap ``kt_ref_NAME`` for every kernel."""
    sources = [Path(s).resolve() for s in sources]
    missing = [str(s) for s in sources if not s.exists()]
    if missing:
        return ReferenceBuild(False, f"source files not found: {', '.join(missing)}")
    for tool in (toolchains.gfortran(), toolchains.f2py()):
        if not tool.available:
            return ReferenceBuild(False, f"cannot build the reference: {tool.name}: {tool.detail}")
    try:
        wrap = fwrapper.wrappers(kernels, sources)
    except Exception as exc:  # a signature the wrapper cannot express
        return ReferenceBuild(False, f"cannot wrap the reference: {exc}")
    stubs = fwrapper.stubs_needed(sources)
    defines = dict(defines or {})
    cpp = [f"-I{Path(i).resolve()}" for i in include] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
    inc_files = sorted(str(f) + str(f.stat().st_mtime_ns) for i in include for f in Path(i).rglob("*") if f.is_file())
    key = _hash(wrap, *stubs.values(), *(str(s) + s.read_text(errors="replace") for s in sources),
                *flags, *cpp, *inc_files, sys.version)
    cache = Path(cache_dir or default_cache_dir()).resolve() / "reference"
    final = cache / key
    module = f"ktref_{key}"
    if (final / "ok").exists():
        return ReferenceBuild(True, "", final, module, cached=True)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
    log: list[str] = []
    objdir = tmp / "obj"
    objdir.mkdir()
    for name, text in stubs.items():
        (tmp / name).write_text(text)
    units = [*sources, *(tmp / n for n in stubs)]
    # compile in rounds so that modules are built before the files that use them
    pending, objects = list(enumerate(units)), []
    while pending:
        failed = []
        for k, src in pending:
            cmd = ["gfortran", "-c", "-fPIC", *flags, f"-J{objdir}", f"-I{objdir}", f"-I{src.parent}"]
            if src.suffix in PREPROCESSED:
                cmd += ["-cpp", *cpp]
            if src.suffix.lower() in FREE_FORM:
                cmd.append("-ffree-line-length-none")
            r = run_process([*cmd, str(src), "-o", str(objdir / f"{k}_{src.stem}.o")],
                            f"gfortran {src.name}", timeout, cwd=tmp)
            log.append(r.output)
            if r.ok:
                objects.append(objdir / f"{k}_{src.stem}.o")
            else:
                failed.append((k, src, r))
        if len(failed) == len(pending):
            k, src, r = failed[0]
            shutil.rmtree(tmp, ignore_errors=True)
            return ReferenceBuild(False, f"reference build failed: {r.reason}", log=_tail("\n".join(log)))
        pending = [(k, s) for k, s, _ in failed]
    (tmp / "kt_wrappers.f90").write_text(wrap)
    f2py = [sys.executable, "-m", "numpy.f2py"]
    env = _py_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    r = run_process([*f2py, "-h", "kt_sig.pyf", "-m", module, "kt_wrappers.f90", "--overwrite-signature"],
                    "f2py (signature)", timeout, cwd=tmp, env=env)
    log.append(r.output)
    if r.ok:
        _plain_signature(tmp / "kt_sig.pyf")
        r = run_process([*f2py, "-c", "kt_sig.pyf", "kt_wrappers.f90", *map(str, objects), f"-I{objdir}",
                         "--backend", "meson", "--build-dir", str(tmp / "bld")],
                        "f2py (build)", timeout, cwd=tmp, env=env)
        log.append(r.output)
    if not r.ok or not list(tmp.glob(f"{module}*.so")):
        shutil.rmtree(tmp, ignore_errors=True)
        reason = r.reason or "f2py produced no extension module"
        return ReferenceBuild(False, f"reference build failed: {reason}", log=_tail("\n".join(log)))
    shutil.rmtree(tmp / "bld", ignore_errors=True)
    (tmp / "ok").write_text("")
    _publish(tmp, final)
    return ReferenceBuild(True, "", final, module, log=_tail("\n".join(log)))


def _call(job: dict[str, Any], kernel: ir.Kernel, cases: list[Case], workdir: Path, timeout: float, what: str,
          env: dict[str, str] | None = None, sigs: list[dict[str, Any]] | None = None,
          timing: dict[str, float] | None = None) -> list[RunResult]:
    """Run ``job`` on every case in one worker process (``timeout`` per case).
    Cases after a failing one come back failed with "not run"."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"{kernel.name}-{job['mode']}-", dir=workdir))
    items = []
    for k, case in enumerate(cases):
        case.save(base / f"in{k}.npz")
        sig = sigs[k] if sigs else signature(kernel, case.env | _sizes(case))
        items.append({"case": str(base / f"in{k}.npz"), "out": str(base / f"out{k}.npz"), "sig": sig})
    progress = base / "progress"
    job = {**job, "cases": items, "progress": str(progress), **({"timing": timing} if timing else {})}
    (base / "job.json").write_text(json.dumps(job, indent=1))
    r = run_process([sys.executable, "-m", "validation.worker", str(base / "job.json")], what, timeout,
                    cwd=workdir, env=_py_env(env), progress=progress)
    done = [json.loads(line) for line in progress.read_text().splitlines()] if progress.exists() else []
    results: list[RunResult] = []
    for k, item in enumerate(items):
        if k < len(done):
            with np.load(item["out"], allow_pickle=False) as z:
                outputs = {n: z[n] for n in z.files}
            results.append(RunResult(True, "ran", "", outputs, float(done[k]["seconds"]), _tail(r.output)))
        elif k == len(done):
            reason = r.reason or f"{what} exited without finishing"
            results.append(RunResult(False, "failed", reason, seconds=r.seconds, log=_tail(r.output)))
        else:
            results.append(RunResult(False, "failed", "not run (an earlier case failed)"))
    shutil.rmtree(base, ignore_errors=True)
    return results


def run_reference(build: ReferenceBuild, kernel: ir.Kernel, case: Case, workdir: Path,
                  timeout: float = 60) -> RunResult:
    return run_reference_cases(build, kernel, [case], workdir, timeout)[0]


def run_reference_cases(build: ReferenceBuild, kernel: ir.Kernel, cases: list[Case], workdir: Path,
                        timeout: float = 60, timing: dict[str, float] | None = None) -> list[RunResult]:
    """The reference on every case, in one process (``timeout`` per case); with ``timing``
    ({"reps", "min_time_s"}) each case is timed and ``RunResult.seconds`` is the median."""
    if not build.ok or build.lib_dir is None:
        return [RunResult(False, "failed", build.reason or "reference not built") for _ in cases]
    job = {"mode": "reference", "lib_dir": str(build.lib_dir), "module": build.module,
           "entry": f"kt_ref_{kernel.name.lower()}"}
    return _call(job, kernel, cases, workdir, timeout, "reference", timing=timing)


def _sizes(case: Case) -> dict[str, Any]:
    return {k: v for k, v in case.sizes.items() if k not in case.scalars}


# ---------------------------------------------------------------- candidates


def candidate_file(target: str, files_dir: Path, name: str) -> Path | None:
    ext = TARGET_EXT[target]
    for d in (Path(files_dir), Path(files_dir) / target):
        for stem in (name, name.lower()):
            f = d / f"{stem}_{target}.{ext}"
            if f.exists():
                return f.resolve()
    return None


def build_candidate(target: str, files_dir: Path, kernel: ir.Kernel, cache_dir: Path | None = None,
                    timeout: float = 600) -> CandidateBuild:
    """Compile a kokkos/cuda candidate to a shared library (cached by hash)."""
    if target not in TARGET_EXT:
        return CandidateBuild(False, "unsupported", f"unknown target '{target}'")
    src = candidate_file(target, files_dir, kernel.name)
    if src is None:
        return CandidateBuild(False, "unsupported",
                              f"no {kernel.name.lower()}_{target}.{TARGET_EXT[target]} in {files_dir}")
    if target == "triton":
        return CandidateBuild(True, "interpreted", "", src)
    if target == "kokkos":
        info = toolchains.find_kokkos()
        if info is None or not shutil.which("g++"):
            return CandidateBuild(False, "unsupported", "Kokkos or g++ not found (see translate doctor)")
        cmd = ["g++", "-std=c++17", "-O2", "-fPIC", "-shared", f"-I{info.include}", f"-I{src.parent}", str(src),
               "-o", "{out}", f"-L{info.lib_dir}", f"-l{info.lib}", f"-Wl,-rpath,{info.lib_dir}"]
        if "OpenMP" in info.backends:
            cmd.insert(1, "-fopenmp")
    else:
        if not shutil.which("nvcc"):
            return CandidateBuild(False, "unsupported", "nvcc not found (see translate doctor)")
        cmd = nvcc_command(src, src.parent)
    return compile_cached(target, cmd, src.read_text(errors="replace"), cache_dir, timeout)


def nvcc_command(src: Path | str, include: Path) -> list[str]:
    """The nvcc line that builds a CUDA file into ``{out}`` (a shared library, sm_90 + PTX)."""
    return ["nvcc", "-std=c++17", "-O2", "-Xcompiler", "-fPIC", "-shared",
            "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90",
            f"-I{include}", str(src), "-o", "{out}"]


def compile_cached(kind: str, cmd: list[str], text: str, cache_dir: Path | None, timeout: float,
                   files: dict[str, str] | None = None) -> CandidateBuild:
    """Run ``cmd`` (``{out}``: the library to make) in a fresh folder holding ``files``,
    cached under ``<cache>/<kind>/<hash of text and cmd>/lib.so``."""
    key = _hash(kind, text, *cmd)
    cache = Path(cache_dir or default_cache_dir()).resolve() / kind  # absolute: the compiler runs elsewhere
    final = cache / key
    if (final / "lib.so").exists():
        return CandidateBuild(True, "built", "", final / "lib.so")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache))
    for name, content in (files or {}).items():
        (tmp / name).write_text(content)
    cmd = [c.replace("{out}", str(tmp / "lib.so")) for c in cmd]
    r = run_process(cmd, f"{kind} compile", timeout, cwd=tmp)
    if not r.ok:
        shutil.rmtree(tmp, ignore_errors=True)
        return CandidateBuild(False, "failed", r.reason, log=_tail(r.output))
    _publish(tmp, final)
    return CandidateBuild(True, "built", "", final / "lib.so", _tail(r.output))


def run_candidate(target: str, files_dir: Path, kernel: ir.Kernel, case: Case, workdir: Path,
                  cache_dir: Path | None = None, timeout: float = 60, gpu: bool | None = None,
                  sig: dict[str, Any] | None = None) -> RunResult:
    """Build (cached) and run one candidate on ``case``; ``sig`` overrides the
    signature (golden data carries its own, shapes already evaluated)."""
    return run_candidate_cases(target, files_dir, kernel, [case], workdir, cache_dir, timeout, gpu,
                               [sig] if sig else None)[0]


def run_candidate_cases(target: str, files_dir: Path, kernel: ir.Kernel, cases: list[Case], workdir: Path,
                        cache_dir: Path | None = None, timeout: float = 60, gpu: bool | None = None,
                        sigs: list[dict[str, Any]] | None = None,
                        timing: dict[str, float] | None = None) -> list[RunResult]:
    """Build (cached) and run one candidate on every case in one process
    (``timeout`` per case): status "ran", "compiled" (CUDA without a GPU),
    "failed" or "unsupported"."""
    b = build_candidate(target, files_dir, kernel, cache_dir)
    if not b.ok or b.artifact is None:
        return [RunResult(False, b.status, b.reason, log=b.log) for _ in cases]
    gpu = toolchains.has_gpu() if gpu is None else gpu
    entry = kernel.name.lower()
    if target == "cuda" and not gpu:
        return [RunResult(True, "compiled", "built with nvcc; no CUDA GPU here to run it", log=b.log) for _ in cases]
    if target == "triton":
        job = {"mode": "triton", "lib": str(b.artifact), "entry": entry, "device": "cuda" if gpu else "cpu"}
        env = {} if gpu else {"TRITON_INTERPRET": "1"}
        return _call(job, kernel, cases, workdir, timeout, "candidate", env, sigs)
    job = {"mode": "ctypes", "lib": str(b.artifact), "entry": f"kt_{entry}"}
    return _call(job, kernel, cases, workdir, timeout, "candidate", sigs=sigs, timing=timing)
