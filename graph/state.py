"""State schemas of the workflow graph. Everything in state is plain JSON-able
data so the SQLite checkpointer can store it; IR objects are rebuilt from the
sources by the run context when a node needs them."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


class RegionJob(TypedDict, total=False):
    """One region as the plan finds it (``WorkflowRun.plan``): what a region's nodes work on."""

    name: str
    source: str  # the file, relative to the workflow's root
    line: int
    status: str  # translated | unsupported | inlined
    reason: str | None  # why unsupported or inlined
    targets: list[str]
    loops: list[dict[str, Any]]  # the loop analysis, one entry per loop (translate.analysis.loop_report)
    agent: bool  # unsupported, and handed to the LLM coder
    fixer: bool  # the LLM fixer may take a target that failed
    notes: list[str]  # the frontend's notes on the region
    kind: str  # routine | program
    holds_loops: bool


class TargetOutcome(TypedDict, total=False):
    """One target's record (``graph.report.target_entry``): the contract keys of report.json,
    then what the later stages add."""

    status: str  # rendered | validated | pending | failed | inconclusive | unsupported | rejected
    reason: str | None
    max_abs_err: float | None
    max_rel_err: float | None
    rel_l2_err: float | None
    trials: int
    files: list[str]
    retryable: bool  # a more conservative schedule may still validate it
    schedule: str  # in words
    # profile (graph.optimize_steps.measured): time, rates and the roofline fraction
    time_s: float
    ref_time_s: float | None
    speedup: float | None
    fraction_of_peak: float | None
    gbps: float
    gflops: float
    bound: str
    roof: float
    copy_gbps: float
    peak_gflops: float
    precision: str
    device: str
    profile_sizes: dict[str, Any]
    work_bytes: float
    work_flops: float
    variant: str
    profile_error: str
    # search (graph.profiling.RegionProfiler.optimize) and the LLM optimizer
    search: list[dict[str, Any]]
    time_before_search_s: float
    time_before_agent_s: float
    suspicious_speedup: bool


class WorkflowState(TypedDict, total=False):
    workflow: str
    regions: list[RegionJob]  # one descriptor per region found by parse/plan
    errors: Annotated[list[str], operator.add]  # bad input, reported and skipped
    results: Annotated[list[dict[str, Any]], operator.add]  # report.json region entries
    report: str  # path of the written report.json


class RegionState(TypedDict, total=False):
    region: RegionJob  # the descriptor from plan
    level: int  # schedule level (translate.schedule.Schedule.level)
    pending: list[str]  # targets to render and validate at this level
    retry: list[str]  # targets to try again at the next, more conservative level
    outcome: dict[str, TargetOutcome]  # per-target report entries, best so far
    attempts: Annotated[list[dict[str, Any]], operator.add]  # every try, for the report
    fixed: bool  # the LLM fixer has had its turn
    results: Annotated[list[dict[str, Any]], operator.add]  # flows back to WorkflowState
