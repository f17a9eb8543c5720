"""How long a candidate may run, the smaller trial it gets when it runs out, and
whether that smaller trial accounts for the timeout.

A time limit decides only whether a run counts, never whether it is right: a run
that finishes is compared with the reference; one stopped by its limit makes the
target "inconclusive" (``validation.region.judge``) and never counts as a matched
trial. So the limits here may be generous without letting a wrong kernel through;
they bound how long a kernel that never finishes is allowed to burn. Limits are
CPU time (``validation.processes.run_process``), so a busy machine does not use them up.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping
from typing import Any

# How much slower than the compiled reference a candidate may legitimately be on the
# same case: the Triton interpreter runs every program of a kernel as numpy operations,
# about 100-1000x the reference's time once the case is large enough for the work
# per element to dominate.
CANDIDATE_SLOWDOWN = 1000.0
# The most the scaling may raise the limit, as a multiple of the configured one, so
# that a kernel in an endless loop is still stopped in bounded time.
LIMIT_CAP = 5.0
# How much faster than the reference's a candidate's time may grow with the size before a
# timeout at full size stops being explained by a retry that matched at smaller sizes
# (explains_timeout): 4 covers a candidate two powers of the size worse after halving.
GROWTH_MARGIN = 4.0


def candidate_limit(timeout: float, ref_cpu_seconds: Iterable[float]) -> float:
    """The candidates' CPU-time limit per case: ``timeout``, raised to CANDIDATE_SLOWDOWN
    times the reference's CPU time on its slowest case, but never above LIMIT_CAP times
    ``timeout``.

    Sound because both sides are CPU time measured on the same machine for the same
    inputs, so neither the load nor the machine's speed enters the ratio. The scaling
    only raises the limit: on small cases the reference's microseconds say nothing about
    a candidate's fixed costs (importing torch, launching), which ``timeout`` covers. One
    limit serves every case of a call (the worker runs them in one process); the largest
    case sets it, and a region's cases differ little in size."""
    slowest = max(ref_cpu_seconds, default=0.0)
    return min(max(timeout, CANDIDATE_SLOWDOWN * slowest), LIMIT_CAP * timeout)


def explains_timeout(limit: float, small_cpu: float, growth: float) -> bool:
    """Whether a retry that matched at smaller sizes accounts for the timeout at full size:
    the candidate's CPU time on the smaller trial (``small_cpu``), times how much more work
    the full-size trial holds (``growth``: :func:`work_growth`), times GROWTH_MARGIN, reaches
    the ``limit`` it ran out of. A kernel that never finishes above some size (a loop whose
    bound overflows) matches quickly when retried smaller, does not account for it, and
    stays inconclusive instead of being validated at sizes where it behaves."""
    return small_cpu * growth * GROWTH_MARGIN >= limit


def work_growth(ref_cpu: float, ref_small_cpu: float, elements: int, small_elements: int) -> float:
    """How many times more work a trial holds than its smaller retry: the ratio of the
    reference's CPU times on the two, or of their input and output elements if that is
    larger (a reference call of microseconds is mostly fixed cost, its ratio near 1)."""
    by_ref = ref_cpu / ref_small_cpu if ref_small_cpu > 0 else 1.0
    return max(by_ref, elements / max(1, small_elements), 1.0)


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value or value < 1:
        return None
    return int(value)


def smaller_sizes(sizes: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The sizes of the retry of a trial that ran out of time: about half of each
    (rounded up, never below 1), keeping the relations routines demand between their
    sizes. Order survives halving (LDA >= M; equal sizes stay equal); a small offset
    does not (LDA >= N+2), so where one size exceeds another by less than the smaller
    one, the offset is kept (M=120, LDA=128 -> 60, 68). A size named in ``values``
    (matched case-insensitively) is pinned: it keeps its value, and pinned integers
    take part in the relations as fixed points (pinned N=300: LDA=302 stays). Other
    sizes are kept."""
    pinned = {k.lower() for k in values}
    fixed = [(n, n) for n in map(_positive_int, values.values()) if n is not None]  # (before, after)
    out = dict(sizes)
    ints = [(k, int(v)) for k, v in sizes.items() if _positive_int(v) is not None]
    for name, before in sorted(ints, key=lambda kv: kv[1]):  # a size after every size it may depend on
        if name.lower() in pinned:
            continue
        after = (before + 1) // 2
        for b, b_after in fixed:
            if b < before < 2 * b:  # within twice the smaller: keep the offset
                after = max(after, b_after + before - b)
        out[name] = after
        fixed.append((before, after))
    return out
