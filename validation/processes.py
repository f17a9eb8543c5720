"""Child processes with limits: every build and run of the tool is one (``run_process``).

A run's limit is CPU time (``cpu_limit`` seconds), so a busy machine does not make it time
out; a wall-clock cap stops one that hangs without computing (``ProcResult.timed_out``). The
process group is killed on either limit, on a stop request (``validation.stopping``), with too
many processes, and with the tool itself (a parent-death signal, ``dies_with_us``).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from validation import cputime, stopping
from validation.sandbox import REPO_ROOT
from validation.secrets import child_environment, redact

# How often run_process reads a CPU-time-limited group's CPU time from /proc (a scan of
# every process, cheap next to the interval), so a limit is enforced to within this.
CPU_POLL_S = 0.2
# A validation worker's wall-clock cap, as a multiple of its CPU-time limit per case. It
# only stops a process that sleeps or deadlocks (uses no CPU); six workers sharing two
# cores each get a third of one, so the cap leaves room for far heavier load than that.
WALL_CAP_FACTOR = 10.0
# Thread counts a validation worker runs with 1 (OpenMP: Kokkos's OpenMP backend and PyTorch's
# intra-op pool; OpenBLAS and MKL under numpy): a CPU-time limit charges every thread, so on a
# 100-core host a threaded run would spend it 100 times faster than the wall clock (spinning
# idle threads included), and a correctness run gains nothing from threads (CPU validation
# runs parallel loops in order; the order audit is what looks for races).
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ProcResult:
    ok: bool
    reason: str
    returncode: int | None
    output: str
    seconds: float
    timed_out: str = ""  # which limit stopped it: "cpu" (CPU time), "wall" (wall-clock) or "" (none)


def tail(text: str, n: int = 4000) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() and not ln.lower().startswith("ninja"):
            return ln[:300]
    return lines[-1][:300] if lines else "(no output)"


def run_process(cmd: list[str], what: str, timeout: float, cwd: Path | None = None,
                env: dict[str, str] | None = None, progress: Path | None = None,
                cpu_limit: float | None = None, max_processes: int | None = None,
                exit_signals: bool = False) -> ProcResult:
    """Run ``cmd`` in its own process group, with ``env`` (default: ours) less its secrets
    (:mod:`validation.secrets`); kill the whole group when it runs ``timeout`` wall-clock
    seconds or, given ``cpu_limit``, once the group has used
    ``cpu_limit`` seconds of CPU time (user + system of all its processes and threads,
    read from /proc: :mod:`validation.cputime`). Both count from the start, or from
    when ``progress`` (a file the process appends to after each step) last grew.

    A CPU-time limit is what a run on a busy machine must be held to: time spent
    waiting for a core is not charged, so a run slowed by other work is not killed,
    while a loop that never ends still is. ``timeout`` is then only the last resort
    against a process that sleeps or deadlocks without using the CPU. Where /proc is
    missing, ``cpu_limit`` is applied to wall-clock time instead. ``ProcResult.timed_out``
    says which limit stopped it ("cpu" or "wall"). ``max_processes``: the group is killed
    when it holds more processes than that at one reading (a fork bomb in a candidate).
    ``exit_signals``: read an exit status above 128 as death by signal (status - 128), as a
    sandbox's first process reports its child's."""
    stopping.check()
    t0 = time.perf_counter()
    if cpu_limit is not None and not cputime.available():
        timeout, cpu_limit = min(timeout, cpu_limit), None
    with tempfile.TemporaryFile("w+", errors="replace") as log:
        try:
            p = subprocess.Popen(dies_with_us(cmd), cwd=cwd, env=child_environment(env), stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            return ProcResult(False, f"{what} could not start: {exc}", None, "", 0.0)
        deadline, stamp, started = t0 + timeout, None, t0
        used = mark = 0.0  # CPU seconds of the group: the latest reading, and the reading at the last progress
        next_poll = t0
        timed_out = ""
        while True:
            try:
                p.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            if stopping.requested():
                timed_out = "stopped"
            now = time.perf_counter()
            step = progress is not None and progress.exists() and progress.stat().st_size != stamp
            if (cpu_limit is not None or max_processes) and (step or now >= next_poll):
                # max: a group process reaped by a parent outside the group takes its time with it
                seconds, count = cputime.group_usage(p.pid)
                used, next_poll = max(used, seconds), now + CPU_POLL_S
                if max_processes and count > max_processes:
                    timed_out = "processes"
            if step:
                assert progress is not None
                stamp, deadline, mark, started = progress.stat().st_size, now + timeout, used, now
            if timed_out:
                pass
            elif cpu_limit is not None and used - mark > cpu_limit:
                timed_out = "cpu"
            elif now > deadline:
                timed_out = "wall"
            if timed_out:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
                break
        log.seek(0)
        out = redact(log.read())  # what a child prints may quote a secret it found: it stops here
    if timed_out == "stopped" or stopping.requested():
        raise stopping.Interrupted(f"{what} stopped: the run was interrupted")
    dt = time.perf_counter() - t0
    rc = p.returncode
    if exit_signals and rc is not None and rc > 128 and rc - 128 in signal.valid_signals():
        rc = 128 - rc
    if timed_out == "processes":
        return ProcResult(False, f"{what} was stopped: it started more than {max_processes} processes", None, out,
                          dt)
    if timed_out == "cpu":
        spent = time.perf_counter() - started
        return ProcResult(False, f"{what} timed out: it used more than its limit of {cpu_limit:g} s of CPU time "
                                 f"({used - mark:.1f} s in {spent:.1f} s wall-clock)", None, out, dt, "cpu")
    if timed_out and cpu_limit is not None:
        return ProcResult(False, f"{what} timed out after {timeout:g} s wall-clock having used only "
                                 f"{used - mark:.1f} s of CPU time (hung or sleeping?)", None, out, dt, "wall")
    if timed_out:
        return ProcResult(False, f"{what} timed out after {timeout:g} s", None, out, dt, "wall")
    if rc == 0:
        return ProcResult(True, "", 0, out, dt)
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.valid_signals() else str(-rc)
        extra = " (killed: out of memory?)" if -rc == signal.SIGKILL else ""
        return ProcResult(False, f"{what} crashed with signal {name}{extra}", rc, out, dt)
    return ProcResult(False, f"{what} failed (exit {rc}): {last_error(out)}", rc, out, dt)


@functools.cache
def setpriv() -> str:
    """util-linux's setpriv, if it can set a parent-death signal here ("" if not)."""
    tool = shutil.which("setpriv")
    if not tool:
        return ""
    try:
        probe = subprocess.run([tool, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10)
        ok = probe.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return tool if ok else ""


def dies_with_us(cmd: list[str]) -> list[str]:
    """``cmd`` set to be killed when the thread that started it dies (the tool killed with
    SIGKILL leaves no compiler or worker running on); a command that is not found stays as
    it is, so that starting it fails with its own name."""
    tool = setpriv()
    return [tool, "--pdeathsig", "KILL", "--", *cmd] if tool and cmd and shutil.which(cmd[0]) else cmd


def py_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Our environment less its secrets, the tool's source on PYTHONPATH, then ``extra``."""
    env = child_environment()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra or {})
    return env


def one_thread(extra: dict[str, str] | None = None) -> dict[str, str]:
    """``extra`` plus ``ONE_THREAD`` set to 1: the environment of a validation worker."""
    return {**dict.fromkeys(ONE_THREAD, "1"), **(extra or {})}
