"""Build and run the reference and the candidates, each in a subprocess.

Public API::

    build_reference(sources, kernels, workdir, include=(), defines=None, cache_dir=None,
                    extra_sources=(), fflags=(), cflags=(), libraries=()) -> ReferenceBuild
    run_reference(build, kernel, case, workdir, timeout=60) -> RunResult
    run_reference_cases(build, kernel, cases, workdir, timeout=60) -> list[RunResult]
    run_candidate(target, files_dir, kernel, case, workdir, cache_dir=None, timeout=60, gpu=None) -> RunResult
    run_candidate_cases(target, files_dir, kernel, cases, workdir, ...) -> list[RunResult]  (one process)

Every build and run is a child process with a time limit; its process group is
killed on timeout. A run's limit is CPU time (``timeout`` seconds per case), so
a busy machine does not make it time out; a wall-clock cap ``processes.WALL_CAP_FACTOR``
times larger stops one that hangs without computing (``RunResult.timed_out``).
Failures (compile errors, crashes, hangs, nonzero exits) come back as results
with ``ok=False`` and a reason, never as exceptions.
Data passes through ``.npz`` files in ``workdir``; builds are cached by hash
under ``cache_dir`` (default ``$KT_CACHE`` or ``~/.cache/kernel-translate``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from targets.base import TARGETS
from translate import ir
from validation import cref, sandbox, toolchains
from validation.builds import build_candidate, content_hash, default_cache_dir, publish
from validation.inputs import Case
from validation.processes import (
    WALL_CAP_FACTOR,
    one_thread,
    py_env,
    run_process,
    tail,
)
from validation.signature import signature


@dataclass(frozen=True)
class RunResult:
    ok: bool
    status: str  # "ran" | "compiled" (built, cannot run here) | "failed" | "unsupported"
    reason: str = ""
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0
    log: str = ""
    # a failed run stopped by its time limit: "cpu" (ran out of CPU time: may finish at smaller
    # sizes) or "wall" (no CPU use for the wall-clock cap: hung or sleeping); such a run decides
    # nothing about correctness (validation.region.judge makes it "inconclusive")
    timed_out: str = ""
    cpu_seconds: float = 0.0  # CPU time of the call itself (the worker's process time, every thread)


@dataclass(frozen=True)
class ReferenceBuild:
    ok: bool
    reason: str
    lib_dir: Path | None = None
    module: str = ""
    log: str = ""
    cached: bool = False
    # kernels (lower-case names) the build cannot run, with why: their file, or a module they
    # need, did not compile; a signature the wrapper cannot express; a wrapper that did not compile
    failed: Mapping[str, str] = field(default_factory=dict)
    language: str = "fortran"  # "c": libraries of the C sources (validation.cref), called through ctypes


def runtime_dirs() -> list[Path]:
    """Folders a built candidate loads libraries from outside the system's (a Kokkos installed
    elsewhere): visible, read-only, in the sandbox."""
    info = toolchains.find_kokkos()
    return [Path(info.lib_dir)] if info is not None and Path(info.lib_dir).is_dir() else []


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
                    flags: tuple[str, ...] = ("-O2",), timeout: float = 600, *,
                    extra_sources: Sequence[Path] = (), fflags: Sequence[str] = (), cflags: Sequence[str] = (),
                    libraries: Sequence[str] = (), language: str = "fortran") -> ReferenceBuild:
    """Compile ``sources`` with gfortran and f2py-wrap ``kt_ref_NAME`` for every kernel that
    can be run (:mod:`validation.refbuild`); the others get their reason in
    ``ReferenceBuild.failed``. A workflow's ``build:`` section adds ``extra_sources`` (Fortran
    and C, compiled and linked, never wrapped), ``fflags`` (after ``flags``, for every
    Fortran file), ``cflags`` (C files) and ``libraries`` (at link time). ``language`` "c": the
    sources are C, built with the system C compiler (:mod:`validation.cref`)."""
    if language == "c":
        c = cref.build_c_reference(sources, kernels, include, dict(defines or {}), cache_dir, timeout,
                                   extra_sources=extra_sources, cflags=cflags, libraries=libraries)
        return ReferenceBuild(c.ok, c.reason, c.lib_dir, "", c.log, c.cached, c.failed, language="c")
    sources = [Path(s).resolve() for s in sources]
    extra = [Path(s).resolve() for s in extra_sources if Path(s).resolve() not in sources]
    missing = [str(s) for s in [*sources, *extra] if not s.exists()]
    if missing:
        return ReferenceBuild(False, f"source files not found: {', '.join(missing)}")
    for tool in (toolchains.gfortran(), toolchains.f2py()):
        if not tool.available:
            return ReferenceBuild(False, f"cannot build the reference: {tool.name}: {tool.detail}")
    if any(s.suffix == ".c" for s in extra) and not shutil.which("cc"):
        return ReferenceBuild(False, "cannot build the reference: the workflow's build.sources hold C files and "
                                     "no C compiler (cc) was found")
    defines = dict(defines or {})
    flags = (*flags, *fflags)
    if "-fopenmp" in (*flags, *cflags) and "-fopenmp" not in libraries:  # objects made so call OpenMP's runtime
        libraries = [*libraries, "-fopenmp"]
    key = _reference_key(sources, extra, kernels, include, defines, flags, cflags, libraries)
    cache = Path(cache_dir or default_cache_dir()).resolve() / "reference"
    final = cache / key
    module = f"ktref_{key}"
    if (final / "ok").exists():
        failed, notes = _reference_record(final)
        return ReferenceBuild(True, "", final, module, log=notes, cached=True, failed=failed)
    from validation import refbuild  # deferred: fparser, which the GPU machine validates golden data without

    cache.mkdir(parents=True, exist_ok=True)
    # f2py's meson build cannot take a folder whose path holds a space: such a build is made in
    # the system's temporary folder, then moved into the cache
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=None if any(c.isspace() for c in str(cache)) else cache))
    compiled = refbuild.compile_sources(sources, extra, tmp, [Path(i) for i in include], defines, flags, cflags,
                                        timeout, run_process)
    notes = "".join(f"note: {n}\n" for n in compiled.notes)
    texts, failed = refbuild.plan_wrappers(kernels, compiled)
    if compiled.compiled == 0 and compiled.failures:
        shutil.rmtree(tmp, ignore_errors=True)
        first = next(iter(compiled.failures.values()))
        return ReferenceBuild(False, f"reference build failed: no source file compiled: {first}",
                              log=notes + tail("\n".join(compiled.log)), failed=failed)
    texts, wrong = refbuild.check_wrappers(texts, tmp, timeout, run_process)
    failed |= wrong
    # f2py needs at least one routine; a build whose kernels all failed still answers with their reasons
    wrap = "\n".join(texts.values()) or "subroutine kt_ref_kt_none()\nend subroutine kt_ref_kt_none\n"
    (tmp / "kt_wrappers.f90").write_text(wrap)
    f2py = [sys.executable, "-m", "numpy.f2py"]
    env = py_env()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    lib_flags, link_files, ldflags = refbuild.link_options(libraries, compiled.objects)
    if ldflags:
        env["LDFLAGS"] = " ".join(filter(None, [env.get("LDFLAGS"), ldflags]))
    log = compiled.log
    r = run_process([*f2py, "-h", "kt_sig.pyf", "-m", module, "kt_wrappers.f90", "--overwrite-signature"],
                    "f2py (signature)", timeout, cwd=tmp, env=env)
    log.append(r.output)
    if r.ok:
        _plain_signature(tmp / "kt_sig.pyf")
        r = run_process([*f2py, "-c", "kt_sig.pyf", "kt_wrappers.f90", *link_files, f"-I{tmp / 'obj'}", *lib_flags,
                         "--backend", "meson", "--build-dir", str(tmp / "bld")],
                        "f2py (build)", timeout, cwd=tmp, env=env)
        log.append(r.output)
    if not r.ok or not list(tmp.glob(f"{module}*.so")):
        shutil.rmtree(tmp, ignore_errors=True)
        reason = r.reason or "f2py produced no extension module"
        return ReferenceBuild(False, f"reference build failed: {reason}", log=notes + tail("\n".join(log)),
                              failed=failed)
    for scratch in ("bld", "check"):
        shutil.rmtree(tmp / scratch, ignore_errors=True)
    (tmp / "failed.json").write_text(json.dumps(failed, indent=1))
    (tmp / "notes.txt").write_text(notes)
    (tmp / "ok").write_text("")
    publish(tmp, final)
    return ReferenceBuild(True, "", final, module, log=notes + tail("\n".join(log)), failed=failed)


def _reference_key(sources: list[Path], extra: list[Path], kernels: list[ir.Kernel], include: Sequence[Path],
                   defines: dict[str, str], flags: Sequence[str], cflags: Sequence[str],
                   libraries: Sequence[str]) -> str:
    """The cache key of a reference build: everything that goes into it (the sources and
    included files, the kernels' signatures, every flag and library, the build's own code)."""
    inc_files = sorted(str(f) + str(f.stat().st_mtime_ns) for i in include for f in Path(i).rglob("*") if f.is_file())
    libs = [lib + (str(Path(lib).stat().st_mtime_ns) if Path(lib).is_file() else "") for lib in libraries]
    here = Path(__file__).parent
    code = [(here / n).read_text() for n in ("fwrapper.py", "fsources.py", "refbuild.py")]
    sigs = sorted(repr((k.name, k.origin, k.result, k.params)) for k in kernels)
    return content_hash(*code, *sigs, *(str(s) + s.read_text(errors="replace") for s in [*sources, *extra]),
                 *flags, "cflags", *cflags, "libs", *libs, *(str(i) for i in include),
                 *(f"{k}={v}" for k, v in sorted(defines.items())), *inc_files, sys.version)


def _reference_record(folder: Path) -> tuple[dict[str, str], str]:
    """The kernels a cached reference build cannot run (with why) and its notes."""
    try:
        failed = json.loads((folder / "failed.json").read_text())
        notes = (folder / "notes.txt").read_text()
    except (OSError, ValueError):
        return {}, ""
    return {str(k): str(v) for k, v in failed.items()}, notes


def write_cases(kernel: ir.Kernel, cases: list[Case], base: Path,
                sigs: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Each case's inputs as ``in<k>.npz`` in ``base``: the worker job's items (case, out, signature)."""
    items = []
    for k, case in enumerate(cases):
        case.save(base / f"in{k}.npz")
        sig = sigs[k] if sigs else signature(kernel, case.env | _sizes(case))
        items.append({"case": str(base / f"in{k}.npz"), "out": str(base / f"out{k}.npz"), "sig": sig})
    return items


def candidate_jail(job: dict[str, Any], base: Path, env: dict[str, str], gpu: bool) -> sandbox.Jail:
    """What a candidate's worker sees: its scratch folder ``base`` (inputs, outputs), its own
    library or launcher and the libraries that links, read-only."""
    return sandbox.Jail(read_only=[Path(job["lib"]), *runtime_dirs()], writable=[base], env=env, gpu=gpu)


def _call(job: dict[str, Any], kernel: ir.Kernel, cases: list[Case], workdir: Path, timeout: float, what: str,
          env: dict[str, str] | None = None, sigs: list[dict[str, Any]] | None = None,
          timing: dict[str, float] | None = None) -> list[RunResult]:
    """Run ``job`` on every case in one worker process: ``timeout`` seconds of CPU time per
    case (the worker's whole process group), with a wall-clock cap ``WALL_CAP_FACTOR`` times
    that per case against a process that hangs without using the CPU (see run_process).
    Cases after a failing one come back failed with "not run"."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"{kernel.name}-{job['mode']}-", dir=workdir))
    items = write_cases(kernel, cases, base, sigs)
    progress = base / "progress"
    job = {**job, "cases": items, "progress": str(progress), **({"timing": timing} if timing else {})}
    (base / "job.json").write_text(json.dumps(job, indent=1))
    cmd = [sys.executable, "-P", "-m", "validation.worker", str(base / "job.json")]
    extra = dict(env or {}) if timing else one_thread(env)
    cwd, full_env, most, boxed = workdir, py_env(extra), None, False
    if job["mode"] != "reference" and sandbox.probe().available:
        jail = candidate_jail(job, base, extra, job.get("device") == "cuda" or bool(job.get("gpu")))
        cmd, cwd, full_env, most, boxed = sandbox.command(cmd, jail, cwd=base), base, None, sandbox.MAX_PROCESSES, True
    if timing:
        # a timing run measures speed with every core it is given: held to wall-clock time (on a quiet machine)
        r = run_process(cmd, what, timeout, cwd=cwd, env=full_env, progress=progress, max_processes=most,
                        exit_signals=boxed)
    else:
        r = run_process(cmd, what, WALL_CAP_FACTOR * timeout, cwd=cwd, env=full_env, progress=progress,
                        cpu_limit=timeout, max_processes=most, exit_signals=boxed)
    done = [json.loads(line) for line in progress.read_text().splitlines()] if progress.exists() else []
    results: list[RunResult] = []
    for k, item in enumerate(items):
        if k < len(done):
            with np.load(item["out"], allow_pickle=False) as z:
                outputs = {n: z[n] for n in z.files}
            results.append(RunResult(True, "ran", "", outputs, float(done[k]["seconds"]), tail(r.output),
                                     cpu_seconds=float(done[k].get("cpu_seconds", 0.0))))
        elif k == len(done):
            reason = r.reason or f"{what} exited without finishing"
            results.append(RunResult(False, "failed", reason, seconds=r.seconds, log=tail(r.output),
                                     timed_out=r.timed_out))
        else:
            results.append(RunResult(False, "failed", "not run (an earlier case failed)"))
    shutil.rmtree(base, ignore_errors=True)
    return results


def run_reference(build: ReferenceBuild, kernel: ir.Kernel, case: Case, workdir: Path,
                  timeout: float = 60) -> RunResult:
    return run_reference_cases(build, kernel, [case], workdir, timeout)[0]


def run_reference_cases(build: ReferenceBuild, kernel: ir.Kernel, cases: list[Case], workdir: Path,
                        timeout: float = 60, timing: dict[str, float] | None = None) -> list[RunResult]:
    """The reference on every case, in one process (``timeout``: CPU seconds per case); with ``timing``
    ({"reps", "min_time_s"}) each case is timed and ``RunResult.seconds`` is the median."""
    why = build.failed.get(kernel.name if build.language == "c" else kernel.name.lower())
    if why:
        return [RunResult(False, "failed", why, log=build.log) for _ in cases]
    if not build.ok or build.lib_dir is None:
        return [RunResult(False, "failed", build.reason or "reference not built") for _ in cases]
    if build.language == "c":
        lib = cref.library(build.lib_dir, kernel.name)
        if lib is None:
            return [RunResult(False, "failed", f"the C reference build holds no {kernel.name}") for _ in cases]
        job = {"mode": "reference", "abi": "c", "lib": str(lib), "entry": f"kt_ref_{kernel.name}"}
    else:
        job = {"mode": "reference", "lib_dir": str(build.lib_dir), "module": build.module,
               "entry": f"kt_ref_{kernel.name.lower()}"}
    return _call(job, kernel, cases, workdir, timeout, "reference", timing=timing)


def _sizes(case: Case) -> dict[str, Any]:
    return {k: v for k, v in case.sizes.items() if k not in case.scalars}


# ---------------------------------------------------------------- candidates


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
                        timing: dict[str, float] | None = None, untrusted: bool = False) -> list[RunResult]:
    """Build (cached) and run one candidate on every case in one process
    (``timeout``: CPU seconds per case): status "ran", "compiled" (CUDA without a GPU),
    "failed" or "unsupported". ``untrusted``: an LLM's code (its build's symbols are checked)."""
    b = build_candidate(target, files_dir, kernel, cache_dir, check_symbols=untrusted)
    if not b.ok or b.artifact is None:
        return [RunResult(False, b.status, b.reason, log=b.log) for _ in cases]
    info = TARGETS[target]
    gpu = toolchains.has_gpu() if gpu is None else gpu
    job = candidate_job(target, b.artifact, kernel, gpu)
    if (info.needs_gpu_to_run or job.get("gpu")) and not gpu:
        return [RunResult(True, "compiled", "built; no GPU here to run it", log=b.log) for _ in cases]
    if job["mode"] == "triton":
        env = {} if gpu else {"TRITON_INTERPRET": "1"}
        return _call(job, kernel, cases, workdir, timeout, "candidate", env, sigs)
    return _call(job, kernel, cases, workdir, timeout, "candidate", sigs=sigs, timing=timing)


def candidate_job(target: str, artifact: Path, kernel: ir.Kernel, gpu: bool) -> dict[str, Any]:
    """The worker's job that calls a built candidate, as its target's runner says."""
    info = TARGETS[target]
    entry = info.symbol(kernel.name)
    if info.runner == "triton":
        return {"mode": "triton", "lib": str(artifact), "entry": entry, "device": "cuda" if gpu else "cpu"}
    on_gpu = info.gpu or ("kokkos" in info.toolchain and (k := toolchains.find_kokkos()) is not None and k.device)
    return {"mode": "ctypes", "lib": str(artifact), "entry": entry, "gpu": on_gpu}
