"""Build, run and judge a whole program: the original next to its migrated builds.

Public API::

    build_program(source, build, targets, timeout, config=()) -> dict[str, BuildOutcome]
    run_program(exe, folder, args, inputs, timeout) -> ProgramRun
    judge(original, migrated, checks) -> list[Verdict]

As a command, ``python -m validation.program FOLDER [--targets cuda,kokkos] [-D...]`` builds,
runs and judges a migrated program folder (``<output>/program``, carried with the output
folder: its CMakeLists names ``../kokkos``, ``../cuda``, ``../fortran``) from its
``program.json``, and prints one line per build: time, transfers, checks. It needs cmake, a
Fortran compiler, and Kokkos (``-DKokkos_ROOT=...``) or CUDA for the builds asked for; it is how
the migrated program runs on a GPU machine.

The program's own CMakeLists (``targets.cmake.program_cmake``) is configured once and each
executable built on its own, so a target that does not build leaves the others. A run
happens in a fresh folder holding copies of the input files; its limit is CPU time, so a
busy machine does not stop it. The judgement compares what the declared checks extract
from both runs: numbers matched in the standard output, in order; every number of an output
file, in order; lines each output must contain.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from targets.base import C_ABI_TARGETS, TARGETS
from validation.builds import configure_args
from validation.processes import run_process, tail

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eEdD][-+]?\d+)?")


@dataclass(frozen=True)
class BuildOutcome:
    ok: bool
    executable: Path | None = None
    reason: str = ""
    log: str = ""


@dataclass(frozen=True)
class ProgramRun:
    ok: bool
    folder: Path
    output: str = ""
    seconds: float = 0.0
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    check: str  # "numbers[0]", "files[1]", "expect[0]"
    ok: bool
    detail: str
    compared: int = 0  # values compared
    max_rel_err: float = 0.0


@dataclass(frozen=True)
class Tol:
    rtol: float
    atol: float


def program_options(targets: Sequence[str]) -> list[str]:
    """The program project's configure options for building ``targets``: each C ABI target's
    ``KT_<TARGET>`` switch, and where the runtimes asked for are (as candidates are configured)."""
    return [*(f"-DKT_{t.upper()}={'ON' if t in targets else 'OFF'}" for t in C_ABI_TARGETS),
            *dict.fromkeys(a for t in targets for a in configure_args(TARGETS[t]))]


def checks_of(check: Mapping[str, Any]) -> Checks:
    """The checks of a program section in its JSON form (``ProgramCheck.model_dump``)."""
    return Checks([(c["pattern"], Tol(c["rtol"], c["atol"])) for c in check["numbers"]],
                  [(c["path"], Tol(c["rtol"], c["atol"])) for c in check["files"]], tuple(check["expect"]))


def run_migrated(exe: Path, runs: Path, target: str, args: Sequence[str], inputs: Iterable[Path],
                 timeout: float, env: Mapping[str, str] | None = None) -> tuple[ProgramRun, dict[str, float]]:
    """A migrated build run in ``runs/<target>`` with its data runtime's log on: the run and
    what its data regions moved (:func:`transfers`)."""
    log = runs / f"{target}-transfers.jsonl"
    log.unlink(missing_ok=True)
    got = run_program(exe, runs / target, args, inputs, timeout, {**(env or {}), "KT_TRANSFER_LOG": str(log)})
    return got, transfers(log)


def build_program(source: Path, build: Path, executables: Sequence[str], timeout: float,
                  config: Sequence[str] = ()) -> dict[str, BuildOutcome]:
    """Configure ``source`` (a folder with the program's CMakeLists) into ``build`` with
    ``config`` (``-D`` options) and build each executable; one that fails leaves the rest."""
    build.mkdir(parents=True, exist_ok=True)
    r = run_process(["cmake", "-S", str(source), "-B", str(build), *config], "program configure", timeout)
    if not r.ok:
        return {e: BuildOutcome(False, reason=f"cmake configure: {r.reason}", log=tail(r.output)) for e in executables}
    out = {}
    for exe in executables:
        r = run_process(["cmake", "--build", str(build), "--target", exe], f"build {exe}", timeout)
        path = build / exe
        out[exe] = BuildOutcome(True, path, log=tail(r.output)) if r.ok and path.exists() else \
            BuildOutcome(False, reason=r.reason or f"no {exe} was built", log=tail(r.output))
    return out


def run_program(exe: Path, folder: Path, args: Sequence[str], inputs: Iterable[Path], timeout: float,
                env: Mapping[str, str] | None = None) -> ProgramRun:
    """``exe args`` in a fresh ``folder`` holding copies of ``inputs``; ``timeout``: CPU seconds;
    ``env``: variables added to the environment. What it printed is kept beside the folder
    (``<folder>-output.txt``), for reading after the run."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in inputs:
        shutil.copy(f, folder / f.name)
    r = run_process([str(exe), *args], exe.name, timeout * 10, cwd=folder, cpu_limit=timeout,
                    env={**os.environ, **(env or {})})
    folder.with_name(f"{folder.name}-output.txt").write_text(r.output)
    return ProgramRun(r.ok, folder, r.output, r.seconds, "" if r.ok else r.reason)


def transfers(log: Path) -> dict[str, Any]:
    """What the data regions of a run moved, from the runtime's ``KT_TRANSFER_LOG`` lines:
    regions, bytes and copies each way, calls, seconds in copies, in kernels, on the host and in
    all; and the calls by routine, calls and seconds in the kernel, the slowest first: outside
    every region (``outside``, with ``outside_calls`` and ``outside_kernel_seconds``) and inside
    regions (``inside``). Empty: none ran."""
    if not log.is_file():
        return {}
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    regions = [r for r in rows if "outside" not in r and "inside" not in r]
    keys = ("h2d_bytes", "d2h_bytes", "copies_in", "copies_out", "copy_seconds", "calls", "kernel_seconds",
            "seconds")
    out: dict[str, Any] = {}
    if regions:
        out = {"regions": len(regions), **{k: sum(r.get(k, 0) for r in regions) for k in keys}}
        # the region's time neither in kernels nor in copies: the host code between the calls
        out["host_seconds"] = max(0.0, out["seconds"] - out["kernel_seconds"] - out["copy_seconds"])
    for where in ("outside", "inside"):
        calls = {name: t for r in rows for name, t in r.get(where, {}).items()}
        if calls:
            out[where] = dict(sorted(calls.items(), key=lambda kv: -kv[1]["kernel_seconds"]))
    if "outside" in out:
        out["outside_calls"] = sum(t["calls"] for t in out["outside"].values())
        out["outside_kernel_seconds"] = sum(t["kernel_seconds"] for t in out["outside"].values())
    return out


def _shown(moved: dict[str, Any]) -> str:
    """The transfers of a run as one line: the five slowest routines outside and inside regions."""
    if not moved:
        return "none"
    for key in ("outside", "inside"):
        if key in moved:
            moved = {**moved, key: dict(list(moved[key].items())[:5])}
    return str(moved)


def numbers(text: str) -> list[float]:
    """Every number in ``text`` (Fortran's D exponents read as E)."""
    return [_float(m.group()) for m in NUMBER.finditer(text)]


def _float(text: str) -> float:
    return float(text.replace("d", "e").replace("D", "e"))


def matched(pattern: str, text: str) -> list[float]:
    """The numbers ``pattern`` matches in ``text``: its first group (or the whole match) read as
    a number; a match that is not a number is NaN (it then never compares equal)."""
    out = []
    for m in re.finditer(pattern, text, re.MULTILINE):
        value = m.group(1) if m.re.groups else m.group()
        try:
            out.append(_float(value.strip()))
        except ValueError:
            out.append(math.nan)
    return out


def compare(expected: Sequence[float], got: Sequence[float], tol: Tol, what: str) -> Verdict:
    if not expected:
        return Verdict(what, False, "the original's run gives no value to compare (check the pattern or file)")
    if len(expected) != len(got):
        return Verdict(what, False, f"{len(got)} values where the original has {len(expected)}")
    worst, where = 0.0, -1
    for k, (a, b) in enumerate(zip(expected, got, strict=True)):
        if not (abs(a - b) <= tol.atol + tol.rtol * abs(a)):  # NaN fails
            return Verdict(what, False, f"value {k + 1} of {len(expected)}: {b!r} where the original has {a!r} "
                                        f"(rtol {tol.rtol:g}, atol {tol.atol:g})", len(expected))
        rel = abs(a - b) / abs(a) if a else abs(b)
        if rel > worst:
            worst, where = rel, k
    detail = f"{len(expected)} values agree" + (f" (largest relative difference {worst:.2e}, value {where + 1})"
                                                   if where >= 0 else " exactly")
    return Verdict(what, True, detail, len(expected), worst)


@dataclass(frozen=True)
class Checks:
    numbers: Sequence[tuple[str, Tol]] = ()
    files: Sequence[tuple[str, Tol]] = ()
    expect: Sequence[str] = field(default_factory=tuple)


def judge(original: ProgramRun, migrated: ProgramRun, checks: Checks) -> list[Verdict]:
    """Each declared check on the two runs (the migrated run judged against the original)."""
    out = []
    for k, (pattern, tol) in enumerate(checks.numbers):
        out.append(compare(matched(pattern, original.output), matched(pattern, migrated.output), tol,
                           f"numbers[{k}]"))
    for k, (name, tol) in enumerate(checks.files):
        a, b = original.folder / name, migrated.folder / name
        if not a.is_file():
            out.append(Verdict(f"files[{k}]", False, f"the original wrote no {name}"))
        elif not b.is_file():
            out.append(Verdict(f"files[{k}]", False, f"the migrated program wrote no {name}"))
        else:
            out.append(compare(numbers(a.read_text(errors="replace")), numbers(b.read_text(errors="replace")), tol,
                               f"files[{k}]"))
    for k, line in enumerate(checks.expect):
        if line not in original.output:
            out.append(Verdict(f"expect[{k}]", False, f"the original's output does not contain '{line}' either"))
        else:
            ok = line in migrated.output
            out.append(Verdict(f"expect[{k}]", ok, f"'{line}' {'found' if ok else 'missing'} in the output"))
    return out


def run_folder(folder: Path, targets: Sequence[str], config: Sequence[str],
               out: Callable[[str], None] = print, prebuilt: bool = False) -> int:
    """Build, run and judge the program in ``folder``; 0 when every build asked for matched.
    ``prebuilt``: the executables are already in ``folder/build`` (built elsewhere)."""
    spec = json.loads((folder / "program.json").read_text())
    name = spec["name"]
    exes = [f"{name}_original", *(f"{name}_{t}" for t in targets)]
    if prebuilt:
        builds = {e: BuildOutcome((folder / "build" / e).is_file(), folder / "build" / e, f"no build/{e}")
                  for e in exes}
    else:
        builds = build_program(folder, folder / "build", exes, spec["timeout"], [*program_options(targets), *config])
    inputs = [folder / "inputs" / i for i in spec["inputs"]]
    checks = checks_of(spec["check"])
    original = builds[exes[0]]
    if not original.ok or original.executable is None:
        out(f"{exes[0]}: does not build: {original.reason}\n{original.log}")
        return 1
    base = run_program(original.executable, folder / "run" / "original", spec["args"], inputs, spec["timeout"])
    out(f"{exes[0]}: {'ran' if base.ok else 'failed: ' + base.reason} in {base.seconds:.3f} s")
    status = 0 if base.ok else 1
    for target, exe in zip(targets, exes[1:], strict=True):
        b = builds[exe]
        if not b.ok or b.executable is None:
            out(f"{exe}: does not build: {b.reason}\n{b.log}")
            status = 1
            continue
        got, moved = run_migrated(b.executable, folder / "run", target, spec["args"], inputs, spec["timeout"])
        if not (base.ok and got.ok):
            out(f"{exe}: failed: {got.reason}")
            status = 1
            continue
        verdicts = judge(base, got, checks)
        out(f"{exe}: {'matched' if all(v.ok for v in verdicts) else 'DIFFERS'} in {got.seconds:.3f} s; "
            f"transfers {_shown(moved)}; " + "; ".join(f"{v.check} {'ok' if v.ok else v.detail}" for v in verdicts))
        status |= 0 if all(v.ok for v in verdicts) else 1
    return status


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m validation.program", description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=Path, help="a migrated program folder (<output>/program)")
    ap.add_argument("--targets", default="kokkos", help="builds to make and judge: kokkos, cuda (comma-separated)")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="a CMake option, e.g. Kokkos_ROOT=/opt/k")
    ap.add_argument("--prebuilt", action="store_true", help="run the executables already in FOLDER/build")
    args = ap.parse_args(argv)
    if not (args.folder / "program.json").is_file():
        print(f"{args.folder}: no program.json (a folder written by translate run for a program: section)")
        return 2
    targets = [t for t in args.targets.split(",") if t]
    return run_folder(args.folder.resolve(), targets, [f"-D{d}" for d in args.defines], prebuilt=args.prebuilt)


if __name__ == "__main__":
    raise SystemExit(main())
