"""Time limits of validation runs: CPU time, not wall-clock time, decides when a run is
stopped (validation.processes.run_process); a timeout is inconclusive, never a match
(validation.region.judge); the candidates' limit and the retry's smaller sizes
(validation.limits). The retry itself runs in tests/test_validation_runs.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.validation_kernels import DAXPY
from validation import cputime
from validation.inputs import make_case
from validation.limits import LIMIT_CAP, candidate_limit, explains_timeout, smaller_sizes, work_growth
from validation.processes import run_process
from validation.region import judge
from validation.runners import RunResult

needs_proc = pytest.mark.skipif(not cputime.available(), reason="needs Linux /proc")


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def burn(seconds: float) -> str:
    """Python that uses ``seconds`` of its own CPU time, however long that takes."""
    return f"import time\nt = time.process_time()\nwhile time.process_time() - t < {seconds}: pass\n"


# ------------------------------------------------------------------ run_process


@needs_proc
def test_a_process_burning_cpu_past_its_limit_is_killed_for_cpu_time() -> None:
    t0 = time.perf_counter()
    r = run_process(py("while True: pass"), "candidate", 60, cpu_limit=0.5)
    assert not r.ok and r.timed_out == "cpu", r.reason
    assert "more than its limit of 0.5 s of CPU time" in r.reason
    assert time.perf_counter() - t0 < 30  # stopped by the CPU limit, long before the wall cap


@needs_proc
def test_cpu_time_of_the_whole_process_group_counts() -> None:
    # the parent only waits; its child does the burning
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {'while True: pass'!r}])"
    r = run_process(py(child), "candidate", 60, cpu_limit=0.5)
    assert r.timed_out == "cpu", r.reason


@needs_proc
def test_a_sleeping_process_is_killed_at_the_wall_clock_cap() -> None:
    t0 = time.perf_counter()
    r = run_process(py("import time; time.sleep(60)"), "candidate", 1.0, cpu_limit=30)
    assert not r.ok and r.timed_out == "wall", r.reason
    assert "timed out after 1 s wall-clock" in r.reason and "hung or sleeping?" in r.reason
    assert time.perf_counter() - t0 < 20


@needs_proc
def test_waiting_longer_than_the_cpu_limit_is_not_a_timeout() -> None:
    # 2 s of wall-clock time (waiting, as a process does for a core on a busy machine) but
    # little CPU time: a wall-clock limit of 1 s would have killed it
    r = run_process(py("import time; time.sleep(2); print('done')"), "candidate", 30, cpu_limit=1.0)
    assert r.ok and "done" in r.output, r.reason
    assert r.seconds > 1.5


@pytest.fixture
def hog_cpu() -> Iterator[int]:
    """A CPU-bound process pinned to one of our CPUs at normal priority (in a session of its
    own: its own autogroup at nice 0, whatever ours is); yields that CPU."""
    cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen(py(f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"),
                           start_new_session=True)
    try:
        yield cpu
    finally:
        hog.send_signal(signal.SIGKILL)
        hog.wait()


@needs_proc
def test_a_run_slowed_by_a_competing_cpu_hog_is_not_killed(hog_cpu: int) -> None:
    # pinned to the hog's CPU at nice 10 it gets about a tenth of it: its 0.25 s of CPU work
    # take seconds of wall-clock time, more than its 1 s CPU limit. In its own session it is
    # in its own autogroup (where the kernel has them), whose nice value is what counts then.
    lower = "try:\n    open('/proc/self/autogroup', 'w').write('10')\nexcept OSError:\n    pass\n"
    code = f"import os; os.sched_setaffinity(0, {{{hog_cpu}}}); os.nice(10)\n{lower}{burn(0.25)}print('done')"
    r = run_process(py(code), "candidate", 40, cpu_limit=1.0)
    assert r.ok and "done" in r.output, r.reason
    assert r.seconds > 1.0  # the contention was real: a wall-clock limit of 1 s would have stopped it


@needs_proc
def test_cpu_limit_restarts_when_the_progress_file_grows(tmp_path: Path) -> None:
    progress = tmp_path / "progress"
    step = f"{burn(0.4)}open({str(progress)!r}, 'a').write('step\\n')\n"
    r = run_process(py(step * 3), "candidate", 60, progress=progress, cpu_limit=0.7)
    assert r.ok, r.reason  # 1.2 s of CPU time in all, under 0.7 s per step
    r = run_process(py(burn(1.2)), "candidate", 60, progress=tmp_path / "none", cpu_limit=0.7)
    assert r.timed_out == "cpu"


def test_wall_clock_only_limit_is_unchanged() -> None:
    r = run_process(py("import time; time.sleep(30)"), "gfortran x.f", 0.5)
    assert r.timed_out == "wall" and r.reason == "gfortran x.f timed out after 0.5 s"


# ------------------------------------------------------------------ verdicts


def test_a_timed_out_run_is_inconclusive_and_never_a_matched_trial() -> None:
    cases = [make_case(DAXPY, {"n": 6}, {}, {}, seed=s) for s in (1, 2, 3)]
    refs = [{"dy": c.arrays["dy"] + c.scalars["da"] * c.arrays["dx"]} for c in cases]
    labels = ["trial 1", "trial 2", "trial 3"]
    runs = [RunResult(True, "ran", outputs=refs[0]),
            RunResult(False, "failed", "candidate timed out: it used more than its limit of 2 s of CPU time",
                      timed_out="cpu"),
            RunResult(False, "failed", "not run (an earlier case failed)")]
    tv = judge("triton", DAXPY, cases, refs, runs, labels, False)
    assert tv.status == "inconclusive" and tv.trials == 1
    assert tv.reason == "triton trial 2: candidate timed out: it used more than its limit of 2 s of CPU time"
    crashed = [runs[0], RunResult(False, "failed", "candidate crashed with signal SIGSEGV"), runs[2]]
    assert judge("triton", DAXPY, cases, refs, crashed, labels, False).status == "failed"
    wrong = [RunResult(True, "ran", outputs={"dy": refs[0]["dy"] + 1.0}), *runs[1:]]
    assert judge("triton", DAXPY, cases, refs, wrong, labels, False).status == "failed"  # a mismatch first decides


# ------------------------------------------------------------------ limits


def test_candidate_limit_grows_with_a_slow_reference_within_a_cap() -> None:
    assert candidate_limit(120, []) == 120
    assert candidate_limit(120, [1e-4, 0.002]) == 120  # a fast reference never lowers the limit
    assert candidate_limit(120, [0.01, 0.3]) == pytest.approx(300)  # 1000x the slowest case
    assert candidate_limit(120, [30.0]) == LIMIT_CAP * 120


def test_smaller_sizes_halve_and_keep_the_relations_between_sizes() -> None:
    assert smaller_sizes({"n": 4000}, {"incx": -2}) == {"n": 2000}
    assert smaller_sizes({"n": 1, "x_min": 1, "x_max": 48}, {}) == {"n": 1, "x_min": 1, "x_max": 24}
    # LDA >= M and LDA >= N+2 still hold; sizes far apart halve on their own
    got = smaller_sizes({"m": 120, "n": 80, "lda": 128, "big": 5000}, {})
    assert got["lda"] >= got["m"] and got["big"] == 2500 and got["n"] == 40
    assert smaller_sizes({"n": 100, "lda": 102}, {}) == {"n": 50, "lda": 52}
    g = smaller_sizes({"m": 257, "n": 193, "k": 131, "lda": 257, "ldb": 131, "ldc": 257}, {})
    assert g["lda"] >= g["m"] and g["ldb"] >= g["k"] and g["ldc"] >= g["m"]
    assert g["m"] * g["n"] * g["k"] <= 257 * 193 * 131 / 3
    # a size pinned by values keeps its value, and what depends on it keeps its offset
    assert smaller_sizes({"n": 300, "lda": 300}, {"LDA": 300})["n"] == 150
    assert smaller_sizes({"lda": 302}, {"n": 300}) == {"lda": 302}
    assert smaller_sizes({"n": 10, "tol": 0.5}, {"trans": "N"}) == {"n": 5, "tol": 0.5}
    assert smaller_sizes({"a": 1, "b": 2, "c": 3}, {}) == {"a": 1, "b": 1, "c": 2}  # never below 1


def test_a_retry_explains_a_timeout_only_if_its_time_scales_up_to_the_limit() -> None:
    # the reference took 4x longer at full size; the inputs are 2x larger
    assert work_growth(0.04, 0.01, 2000, 1000) == pytest.approx(4.0)
    assert work_growth(2e-6, 2e-6, 2000, 1000) == pytest.approx(2.0)  # microsecond references: the elements
    assert work_growth(0.0, 0.0, 10, 10) == 1.0
    # 10 s at a quarter of the work: about 40 s at full size, past a 30 s limit
    assert explains_timeout(30.0, 10.0, 4.0)
    # 0.01 s at half the work cannot have become 120 s (even growing 4x faster than the reference)
    assert not explains_timeout(120.0, 0.01, 2.0)
