"""The validation protocol for one region (docs/ARCHITECTURE.md, "Validation protocol").

``validate_region`` builds the reference once, runs several trials with
fresh seeds at the workflow sizes, one more there whose random float inputs are sorted
(``stress.sorted_inputs``: a search meets its answer late), for regions with integer results one
whose inputs tie past fp16 (``stress.near_ties``), plus two at other sizes (every size plus a
delta drawn from the seed, one in each range of ``OTHER_SIZE_DELTAS``: generated
code must not hard-code shapes, and additive constraints such as LDA >= N+2 still
hold), for every combination of ``values`` given as
lists, runs every candidate target on the same inputs, compares, records
golden data, and returns one status per target. A run that exceeds its time
limit decides nothing: the target is "inconclusive", and its trials from the one
that ran out of time are retried once at smaller sizes (``validation.limits``).
"""

from __future__ import annotations

import itertools
import random
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from translate import ir
from translate.schedule import Schedule, apply_schedule
from validation import golden
from validation.compare import Comparison, compare
from validation.inputs import Case, make_case
from validation.limits import candidate_limit, explains_timeout, smaller_sizes, work_growth
from validation.order_audit import audit_order
from validation.runners import (
    ReferenceBuild,
    RunResult,
    build_reference,
    run_candidate_cases,
    run_reference_cases,
)
from validation.signature import ValidationError
from validation.signature import reduces as kernel_reduces
from validation.stress import integer_results, near_ties, sorted_inputs
from validation.work import idle

STATUSES = ("validated", "compiled", "failed", "unsupported", "inconclusive")
# the ranges the deltas of the other-size trials are drawn from (one trial per range): a small
# step, and one that crosses a block of 16 or 32 elements
OTHER_SIZE_DELTAS = ((1, 9), (10, 37))
SORTED = "workflow size, sorted inputs"  # the trial whose random float inputs are sorted ascending
NEAR_TIES = "workflow size, near ties"  # the trial whose random float inputs differ past fp16 (validation.stress)
STRESS = {SORTED: sorted_inputs, NEAR_TIES: near_ties}


@dataclass
class TargetValidation:
    target: str
    status: str  # one of STATUSES
    reason: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    rel_l2_err: float = 0.0
    trials: int = 0  # cases the candidate ran and matched
    comparisons: list[Comparison] = field(default_factory=list)


@dataclass
class RegionValidation:
    region: str
    kernel: str
    targets: dict[str, TargetValidation]
    reference_ok: bool
    reason: str = ""  # why the reference (or the inputs) failed, if they did
    cases: list[dict[str, Any]] = field(default_factory=list)  # seed, sizes, values of each trial
    golden_dir: Path | None = None

    def status(self, target: str) -> str:
        return self.targets[target].status


def expand_values(values: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
                  names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``{trans: [N, T], incx: [1, -2]}`` -> the 4 combinations (a list of dicts is taken as is).
    With ``names`` (the routine's arguments), keys that name none of them are dropped first
    (case-insensitively): a workflow-wide ``incy: [1, 3]`` must not run a routine without
    INCY twice on the same inputs."""
    if names is not None and values:
        known = {n.lower() for n in names}
        if isinstance(values, Mapping):
            values = {k: v for k, v in values.items() if k.lower() in known}
        else:
            unique: list[dict[str, Any]] = []
            for v in values:
                kept = {k: x for k, x in v.items() if k.lower() in known}
                if kept not in unique:
                    unique.append(kept)
            values = unique
    if not values:
        return [{}]
    if not isinstance(values, Mapping):
        return [dict(v) for v in values] or [{}]
    keys = list(values)
    options = [v if isinstance(v, (list, tuple)) else [v] for v in values.values()]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*options)]


def other_deltas(seed: int) -> list[int]:
    """The deltas of the other-size trials of a validation seeded ``seed`` (one per range of
    ``OTHER_SIZE_DELTAS``): as secret as the seed, so code cannot be written for them."""
    rng = random.Random(seed * 7919 + 17)
    return [rng.randint(lo, hi) for lo, hi in OTHER_SIZE_DELTAS]


def alternate_sizes(sizes: Mapping[str, int], delta: int) -> dict[str, int]:
    return {k: int(v) + delta for k, v in sizes.items()}


def plan_cases(sizes_list: Mapping[str, int] | Sequence[Mapping[str, int]],
               values_list: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
               trials: int, seed: int, names: Sequence[str] | None = None, ties: bool = False,
               ) -> list[tuple[dict[str, int], dict[str, Any], int, str]]:
    """(sizes, values, seed, label) of every trial; ``names``: see :func:`expand_values`;
    ``ties``: a near-tie trial too (``validation.stress``: regions with integer results)."""
    all_sizes = [dict(sizes_list)] if isinstance(sizes_list, Mapping) else [dict(s) for s in sizes_list]
    all_sizes = all_sizes or [{}]
    plan = []
    k = 0
    for vals in expand_values(values_list, names):
        for sizes in all_sizes:
            for _ in range(max(1, trials)):
                plan.append((sizes, vals, seed + k, "workflow size"))
                k += 1
        plan.append((all_sizes[0], vals, seed + k, SORTED))
        k += 1
        if ties:
            plan.append((all_sizes[0], vals, seed + k, NEAR_TIES))
            k += 1
        for delta in other_deltas(seed):
            plan.append((alternate_sizes(all_sizes[0], delta), vals, seed + k, f"different size (+{delta})"))
            k += 1
    return plan


def _describe(n: int, seed: int, label: str, sizes: Mapping[str, int], values: Mapping[str, Any]) -> str:
    given = ", ".join(f"{k}={v}" for k, v in {**sizes, **values}.items())
    return f"trial {n} ({label}, seed {seed}{', ' + given if given else ''})"


def _fail_all(targets: Sequence[str], status: str, reason: str) -> dict[str, TargetValidation]:
    return {t: TargetValidation(t, status, reason) for t in targets}


@dataclass(frozen=True)
class ReferenceSpec:
    """How the Fortran reference of a region is had: ``build``, a build of the whole project to
    reuse, or else ``sources`` built with ``all_kernels`` and the region wrapped
    (``include``, ``defines``; ``options``: further keyword arguments of ``build_reference``, a
    workflow's ``build:`` section: ``extra_sources``, ``fflags``, ``cflags``, ``libraries``)."""

    sources: Sequence[Path] = ()
    build: ReferenceBuild | None = None
    all_kernels: Sequence[ir.Kernel] = ()
    include: Sequence[Path] = ()
    defines: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ValidationPlan:
    """What one region is validated on and how it is judged.

    ``sizes``: one sizes dict or several; ``values``: a dict whose list values are expanded into
    combinations, or a list of dicts; ``generators``: input generators by argument
    (``project_dir`` is where ``module:function`` generators are found). ``trials`` fresh seeds
    drawn from ``seed``. ``reduces`` (None: read from the kernel) and ``tolerance`` set the
    comparison. ``schedule_level`` (the schedule the targets were rendered at; None skips it)
    runs the order audit (``validation.order_audit``) on the first trial of every combination of
    values: a parallel loop whose reversal changes the result fails every target, since no
    candidate here can show the race. ``timeout``: CPU seconds per trial of a worker
    (``validation.runners``); the candidates' limit is raised where the reference itself is slow
    (``limits.candidate_limit``). ``untrusted``: the targets' files are an LLM's (their builds'
    symbols are checked, ``validation.symbols``)."""

    sizes: Mapping[str, int] | Sequence[Mapping[str, int]]
    values: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
    generators: Mapping[str, str] = field(default_factory=dict)
    trials: int = 3
    seed: int = 1234
    reduces: bool | None = None
    tolerance: tuple[float, float] | None = None
    schedule_level: int | None = 0
    project_dir: Path | None = None
    timeout: float = 60
    gpu: bool | None = None
    untrusted: bool = False
    reference: ReferenceSpec = field(default_factory=ReferenceSpec)


def validate_region(kernel: ir.Kernel, target_dirs: Mapping[str, Path], plan: ValidationPlan, *,
                    region: str | None = None, workdir: Path | None = None, cache_dir: Path | None = None,
                    golden_root: Path | None = None) -> RegionValidation:
    """Validate every target of one region against the Fortran reference, as ``plan`` says.

    ``target_dirs`` maps a target (kokkos, cuda, triton) to the folder holding
    ``NAME_<target>.*``. ``golden_root`` (e.g. ``out/golden``) records
    ``<golden_root>/<region>/case<k>.npz``. Never raises for a failing build,
    crash or hang: those come back as target statuses with reasons.
    A candidate out of CPU time in a trial is retried
    once from that trial on at smaller sizes (``limits.smaller_sizes``): validated
    only if every retried trial matches and the retry's time accounts for the
    timeout (``limits.explains_timeout``); otherwise still "inconclusive" (or
    "failed" on a mismatch), never validated.
    """
    ref = plan.reference
    generators, timeout, gpu, untrusted, tolerance = (plan.generators, plan.timeout, plan.gpu, plan.untrusted,
                                                      plan.tolerance)
    project_dir, schedule_level = plan.project_dir, plan.schedule_level
    reference = ref.build
    region = region or kernel.name
    targets = list(target_dirs)
    reduces = kernel_reduces(kernel) if plan.reduces is None else plan.reduces
    with tempfile.TemporaryDirectory(prefix=f"kt-{region}-") as tmp:
        work = Path(workdir) if workdir else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        cases_plan = plan_cases(plan.sizes, plan.values, plan.trials, plan.seed, [p.name for p in kernel.params],
                                integer_results(kernel))
        labels = [_describe(n + 1, s, label, sz, v) for n, (sz, v, s, label) in enumerate(cases_plan)]
        try:
            cases = [make_case(kernel, sz, v, generators, s, project_dir) for sz, v, s, _ in cases_plan]
        except ValidationError as exc:
            return RegionValidation(region, kernel.name, _fail_all(targets, "failed", str(exc)), False, str(exc))
        cases = [STRESS[label](kernel, c, generators) if label in STRESS else c
                 for c, (*_, label) in zip(cases, cases_plan, strict=True)]
        at_size = [(c, what) for c, what, (*_, label) in zip(cases, labels, cases_plan, strict=True)
                   if label == "workflow size"]
        if at_size and all(idle(kernel, c) for c, _ in at_size):
            why = (f"nothing to validate: every loop of {kernel.name} runs zero times in every trial at the workflow "
                   f"sizes ({at_size[0][1]}); give sizes at which it works")
            return RegionValidation(region, kernel.name, _fail_all(targets, "failed", why), False, why)
        if reference is None:
            wrapped = [k for k in ref.all_kernels if k.name != kernel.name] + [kernel]
            reference = build_reference(list(ref.sources), wrapped, work / "ref-build", list(ref.include),
                                        dict(ref.defines), cache_dir, **dict(ref.options))
        if not reference.ok:
            why = reference.failed.get(kernel.name.lower(), reference.reason)
            return RegionValidation(region, kernel.name, _fail_all(targets, "failed", why), False, why)
        gdir = Path(golden_root) / region if golden_root else None
        refs = run_reference_cases(reference, kernel, cases, work, timeout)
        for what, ref in zip(labels, refs, strict=True):
            if not ref.ok:
                reason = f"reference failed in {what}: {ref.reason}"
                status = "inconclusive" if ref.timed_out else "failed"  # out of time: nothing said of the targets
                return RegionValidation(region, kernel.name, _fail_all(targets, status, reason), False, reason)
        case_log = [{"seed": s, "sizes": sz, "values": v, "label": label} for sz, v, s, label in cases_plan]
        if gdir is not None:
            golden.record_all(gdir, kernel, [(c, r.outputs) for c, r in zip(cases, refs, strict=True)], reduces,
                              tolerance)
        if schedule_level is not None:
            reason = _audit(kernel, schedule_level, cases_plan, cases, labels, reduces, tolerance)
            if reason:
                return RegionValidation(region, kernel.name, _fail_all(targets, "failed", reason), True, "",
                                        case_log, gdir)
        results = {}
        limit = candidate_limit(timeout, (r.cpu_seconds for r in refs))
        smaller: list[_Smaller] = []  # the trials at smaller sizes, made when a target first runs out of time
        for t in targets:
            runs = run_candidate_cases(t, Path(target_dirs[t]), kernel, cases, work, cache_dir, limit, gpu,
                                       untrusted=untrusted)
            tv = judge(t, kernel, cases, [r.outputs for r in refs], runs, labels, reduces, tolerance)
            k = tv.trials  # after a timeout: the trial that ran out of time (the ones before it matched)
            if tv.status == "inconclusive" and k < len(runs) and runs[k].timed_out == "cpu":
                if not smaller:
                    smaller.append(_smaller_trials(kernel, cases_plan, generators, project_dir, reference, work,
                                                   timeout))
                retry = smaller[0]
                if retry.reason or not retry.shrunk[k]:
                    tv.reason += f"; no retry at smaller sizes: {retry.reason or 'no size of the trial can shrink'}"
                else:
                    again = run_candidate_cases(t, Path(target_dirs[t]), kernel, retry.cases[k:], work, cache_dir,
                                                limit, gpu, untrusted=untrusted)
                    verdict = judge(t, kernel, retry.cases[k:], retry.refs[k:], again, retry.labels[k:], reduces,
                                    tolerance)
                    growth = work_growth(refs[k].cpu_seconds, retry.ref_cpu[k], _elements(cases[k]),
                                         _elements(retry.cases[k]))
                    tv = _after_retry(tv, verdict, explains_timeout(limit, again[0].cpu_seconds, growth))
            results[t] = tv
        return RegionValidation(region, kernel.name, results, True, "", case_log, gdir)


@dataclass(frozen=True)
class _Smaller:
    """Every trial again at smaller sizes (``limits.smaller_sizes``), for the retry of a
    target that ran out of time: the cases, the reference's outputs, the labels, whether
    each trial's sizes shrank; or why there is no retry."""
    cases: list[Case] = field(default_factory=list)
    refs: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    shrunk: list[bool] = field(default_factory=list)
    ref_cpu: list[float] = field(default_factory=list)  # the reference's CPU seconds on each
    reason: str = ""


def _elements(case: Case) -> int:
    return sum(int(a.size) for a in case.arrays.values())


def _smaller_trials(kernel: ir.Kernel, plan: list[tuple[dict[str, int], dict[str, Any], int, str]],
                    generators: Mapping[str, str], project_dir: Path | None, reference: ReferenceBuild,
                    work: Path, timeout: float) -> _Smaller:
    """The trials of ``plan`` at smaller sizes, same seeds, with the reference's outputs."""
    small = [(smaller_sizes(sz, v), v, s, f"{label}, retried smaller after a timeout") for sz, v, s, label in plan]
    labels = [_describe(n + 1, s, label, sz, v) for n, (sz, v, s, label) in enumerate(small)]
    try:
        cases = [make_case(kernel, sz, v, generators, s, project_dir) for sz, v, s, _ in small]
    except ValidationError as exc:
        return _Smaller(reason=f"the smaller sizes are not valid: {exc}")
    cases = [STRESS[label](kernel, c, generators) if label in STRESS else c
             for c, (*_, label) in zip(cases, plan, strict=True)]
    refs = run_reference_cases(reference, kernel, cases, work, timeout)
    for what, ref in zip(labels, refs, strict=True):
        if not ref.ok:
            return _Smaller(reason=f"the reference failed in {what}: {ref.reason}")
    shrunk = [sz != before for (sz, *_), (before, *_) in zip(small, plan, strict=True)]
    return _Smaller(cases, [r.outputs for r in refs], labels, shrunk, [r.cpu_seconds for r in refs])


def _after_retry(first: TargetValidation, retry: TargetValidation, explained: bool) -> TargetValidation:
    """The verdict on a target that ran out of time in a trial (``first``: inconclusive,
    its trials the ones before that matched) once that trial and the rest were retried at
    smaller sizes (``retry``): validated only if every retried trial matched and the retry's
    time accounts for the timeout (``explained``: ``limits.explains_timeout``); a mismatch fails."""
    res = TargetValidation(first.target, retry.status, trials=first.trials + retry.trials,
                           comparisons=first.comparisons + retry.comparisons,
                           max_abs_err=max(first.max_abs_err, retry.max_abs_err),
                           max_rel_err=max(first.max_rel_err, retry.max_rel_err),
                           rel_l2_err=max(first.rel_l2_err, retry.rel_l2_err))
    if retry.status == "validated" and not explained:
        res.status = "inconclusive"
        res.reason = (f"{first.reason}; the retry at smaller sizes matched, but so quickly that the size does "
                      "not explain the timeout (does it never finish above some size?)")
    elif retry.status == "validated":
        res.reason = f"{first.reason}; validated on the retry at smaller sizes"
    elif retry.status == "failed":
        res.reason = retry.reason  # its label says it is the retry
    else:
        res.status, res.reason = "inconclusive", f"{first.reason}; retried at smaller sizes: {retry.reason}"
    return res


def _audit(kernel: ir.Kernel, level: int, plan: list[tuple[dict[str, int], dict[str, Any], int, str]],
           cases: list[Case], labels: list[str], reduces: bool,
           tolerance: tuple[float, float] | None = None) -> str:
    """The order audit of the kernel as scheduled, once per combination of values."""

    scheduled = apply_schedule(kernel, Schedule(level=level))
    seen: set[str] = set()
    for (_, vals, _, _), case, what in zip(plan, cases, labels, strict=True):
        key = repr(sorted(vals.items()))
        if key in seen:
            continue
        seen.add(key)
        reason = audit_order(scheduled, case.scalars, case.arrays, reduces, tolerance)
        if reason:
            return f"order audit, {what}: {reason}"
    return ""


def judge(target: str, kernel: ir.Kernel, cases: Sequence[Case], ref_outputs: Sequence[Mapping[str, Any]],
          runs: Sequence[RunResult], labels: Sequence[str], reduces: bool,
          tolerance: tuple[float, float] | None = None,
          allclose: tuple[float, float] | None = None) -> TargetValidation:
    """A target's status over all trials (shared by the Fortran and PyTorch
    protocols): the first failure decides. A run stopped by its time limit makes the
    target "inconclusive" (never "validated"); ``trials`` counts only matched runs, so
    it is then the index of the trial that timed out."""
    res = TargetValidation(target, "validated")
    for case, ref, run, what in zip(cases, ref_outputs, runs, labels, strict=True):
        if run.status == "compiled":
            return TargetValidation(target, "compiled", run.reason)
        if not run.ok:
            if run.status == "unsupported":
                return TargetValidation(target, "unsupported", run.reason)
            if run.timed_out:  # slow or hung: says nothing about correctness, and never counts as matched
                res.status, res.reason = "inconclusive", f"{target} {what}: {run.reason}"
                return res
            res.status, res.reason = "failed", f"{target} {what}: {run.reason}"
            return res
        cmp = compare(kernel, ref, run.outputs, reduces, case.env, tolerance, allclose)
        res.comparisons.append(cmp)
        res.max_abs_err = max(res.max_abs_err, cmp.max_abs_err)
        res.max_rel_err = max(res.max_rel_err, cmp.max_rel_err)
        res.rel_l2_err = max(res.rel_l2_err, cmp.rel_l2_err)
        if not cmp.ok:
            res.status = "inconclusive" if cmp.inconclusive else "failed"
            res.reason = f"{target} {what}: {cmp.reason}"
            return res
        res.trials += 1
    if res.trials == 0:
        res.status, res.reason = "failed", "no trial ran"
    return res
