"""Timing that the timed code cannot touch: the clock is this process's, the inputs are fresh
for every call, and every timed call's outputs come back to be checked.

:func:`time_calls` starts a worker (:mod:`validation.serve`; a candidate's in the sandbox)
holding one case per timed call, each with inputs of its own (a result kept from an earlier
call, or found already in the output buffer, is of no use). It measures the round trip of a
no-op command (``ping``) first, then sends ``call K`` for each case in turn and reads this
process's ``time.perf_counter`` from the command to the reply: a call's time is that round
trip less the median no-op round trip. The worker's outputs of every call come back in
:attr:`TimedCalls.outputs`, for the caller to compare with the reference's on the same inputs
(:func:`graph.optimize_steps.time_untrusted`). The first case is a warm-up (compilation,
caches), timed but not counted.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from translate import ir
from validation import sandbox, stopping
from validation.inputs import Case
from validation.processes import dies_with_us, one_thread, py_env
from validation.runners import candidate_jail, write_cases
from validation.secrets import child_environment, redact

PINGS = 15  # no-op round trips measured before the calls


class TimingError(RuntimeError):
    """A timing run that did not complete (the worker failed, hung or answered out of turn)."""


@dataclass(frozen=True)
class TimedCalls:
    seconds: list[float]  # per counted call (the warm-up left out), this process's clock less the no-op
    outputs: list[dict[str, np.ndarray]] = field(default_factory=list)  # every call's, the warm-up's first
    ping_s: float = 0.0

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)


class _Channel:
    """Line-wise replies from a child's stdout, with a time limit per reply."""

    def __init__(self, proc: subprocess.Popen[bytes], limit: float) -> None:
        self.proc, self.limit, self.buf = proc, limit, b""

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, word: str) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.limit
        while b"\n" not in self.buf:
            stopping.check()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimingError(f"no answer to '{word}' within {self.limit:g} s")
            ready, _, _ = select.select([fd], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise TimingError(f"the worker ended before answering '{word}'")
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        if line.decode(errors="replace").strip() != word:
            raise TimingError(f"the worker answered '{line[:80]!r}' where '{word}' was due")


def time_calls(job: dict[str, Any], kernel: ir.Kernel, cases: list[Case], workdir: Path, *, sandboxed: bool,
               gpu: bool = False, timeout: float = 600) -> TimedCalls:
    """Time ``job`` (a worker job: reference, ctypes or triton) on each of ``cases`` (the first a
    warm-up), one call per case, from this process; ``sandboxed``: in the sandbox (a candidate)."""
    if len(cases) < 2:
        raise ValueError("time_calls needs a warm-up case and at least one timed case")
    workdir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"{kernel.name}-timed-", dir=workdir))
    try:
        items = write_cases(kernel, cases, base)
        (base / "job.json").write_text(json.dumps({**job, "cases": items}, indent=1))
        cmd = [sys.executable, "-P", "-m", "validation.serve", str(base / "job.json")]
        env_extra = {} if gpu else one_thread({"TRITON_INTERPRET": "1"} if job["mode"] == "triton" else {})
        cwd, env = workdir, py_env(env_extra)
        if sandboxed:
            if not sandbox.probe().available:
                raise TimingError(f"no sandbox to time untrusted code in: {sandbox.probe().detail}")
            cmd = sandbox.command(cmd, candidate_jail(job, base, env_extra, gpu), cwd=base)
            cwd, env = base, None
        return _run(cmd, cwd, env, base, items, timeout)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None, base: Path, items: list[dict[str, Any]],
         timeout: float) -> TimedCalls:
    log = base / "log.txt"
    with open(log, "wb") as err:
        proc = subprocess.Popen(dies_with_us(cmd), cwd=cwd, env=child_environment(env), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    chan = _Channel(proc, timeout)
    try:
        chan.expect("ready")
        pings = []
        for _ in range(PINGS):
            t0 = time.perf_counter()
            chan.send("ping")
            chan.expect("pong")
            pings.append(time.perf_counter() - t0)
        ping = statistics.median(pings)
        seconds = []
        for k in range(len(items)):
            t0 = time.perf_counter()
            chan.send(f"call {k}")
            chan.expect(f"done {k}")
            seconds.append(max(0.0, time.perf_counter() - t0 - ping))
        chan.send("exit")
        chan.expect("saved")
        proc.wait(timeout=60)
    except (TimingError, OSError, subprocess.TimeoutExpired) as exc:
        text = redact(log.read_text(errors="replace"))[-2000:] if log.exists() else ""
        raise TimingError(f"{exc}{': ' + text.strip().splitlines()[-1] if text.strip() else ''}") from None
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()
    outputs = []
    for item in items:
        with np.load(item["out"], allow_pickle=False) as z:
            outputs.append({n: z[n] for n in z.files})
    return TimedCalls(seconds[1:], outputs, ping)

