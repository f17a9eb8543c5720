"""Nodes and routing of the workflow graph: small functions over the state that
delegate the work to graph.pipeline.WorkflowRun (the run context)."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from graph.agent_steps import code_region, fix_targets, optimize_targets
from graph.pipeline import WorkflowRun
from graph.state import RegionState, WorkflowState
from translate.schedule import MAX_LEVEL


def parse_and_plan(state: WorkflowState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    regions, errors = runtime.context.plan()
    return {"regions": regions, "errors": errors}


def fan_out(state: WorkflowState) -> list[Send] | Literal["report"]:
    """One region subgraph per translatable region; unsupported ones go straight to the report."""
    sends = [
        Send("region", {"region": r, "level": 0, "pending": list(r["targets"]), "retry": [], "outcome": {}})
        for r in state.get("regions", [])
        if r["status"] == "translated" or r.get("agent")
    ]
    return sends or "report"


def route_start(state: RegionState) -> Literal["code", "translate"]:
    """Regions the compiler could not lower go to the LLM coder (only sent when an agent is configured)."""
    return "code" if state["region"].get("agent") else "translate"


def code(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    """The LLM coder writes every target of an unsupported region; each answer is gated and validated."""

    outcome, attempts = code_region(runtime.context, state["region"]["name"], state["pending"])
    return {"outcome": outcome, "pending": [], "attempts": attempts}


def fix(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    """The LLM fixer on the compiler's translations that failed at every schedule level."""

    fixed, attempts = fix_targets(runtime.context, state["region"]["name"], state.get("outcome", {}))
    return {"outcome": {**state.get("outcome", {}), **fixed}, "attempts": attempts, "fixed": True}


def translate(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    """Render the pending targets; one the renderer cannot express at this
    schedule is set aside for a more conservative one."""
    region, level = state["region"], state.get("level", 0)
    rendered = runtime.context.render(region["name"], state["pending"], level)
    outcome = dict(state.get("outcome", {}))
    pending, again = [], []
    for target, entry in rendered.items():
        if entry["status"] == "rendered":
            pending.append(target)
        else:
            outcome[target] = entry
            again.append(target)
    return {"pending": pending, "outcome": outcome, "retry": again}


def validate(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    region, level = state["region"], state.get("level", 0)
    if not state["pending"]:
        return {}
    results = runtime.context.validate(region["name"], state["pending"], level)
    outcome = dict(state.get("outcome", {}))
    outcome.update(results)
    # a candidate that failed may pass with a more conservative schedule; a failed
    # reference or bad inputs will not, so those are final
    again = [t for t, e in results.items() if e["status"] == "failed" and e.get("retryable", True)]
    attempts = [{"level": level, "target": t, "status": e["status"], "reason": e.get("reason")}
                for t, e in results.items()]
    return {"outcome": outcome, "pending": [], "retry": state.get("retry", []) + again, "attempts": attempts}


def route_after_validate(state: RegionState) -> Literal["retry", "fix", "profile"]:
    """A more conservative schedule first; then, with an agent configured, one turn of the fixer."""
    if state.get("retry") and state.get("level", 0) < MAX_LEVEL:
        return "retry"
    failed = any(e.get("status") == "failed" for e in state.get("outcome", {}).values())
    if failed and state["region"].get("fixer") and not state.get("fixed"):
        return "fix"
    return "profile"


def profile(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    """Time the validated targets that run here against the reference."""
    timed = runtime.context.profiler.profile(state["region"]["name"], state.get("outcome", {}), state.get("level", 0))
    return {"outcome": {**state.get("outcome", {}), **timed}} if timed else {}


def route_after_profile(state: RegionState, runtime: Runtime[WorkflowRun]) -> Literal["optimize", "finish"]:
    return "optimize" if runtime.context.profiler.slow_targets(state.get("outcome", {})) else "finish"


def optimize(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    """The schedule-variant search for the targets below the workflow's roofline fraction."""
    run, name = runtime.context, state["region"]["name"]
    found = run.profiler.optimize(name, state.get("outcome", {}), state.get("level", 0))
    outcome = {**state.get("outcome", {}), **found}
    slow = run.profiler.slow_targets(outcome)
    if not (state["region"].get("fixer") and slow):
        return {"outcome": outcome}

    found, attempts = optimize_targets(run, name, outcome, slow)
    return {"outcome": {**outcome, **found}, "attempts": attempts}


def retry(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    level = state.get("level", 0) + 1
    runtime.context.progress(f"{state['region']['name']}: retrying {', '.join(state['retry'])} "
                             f"with a more conservative schedule (level {level})")
    return {"level": level, "pending": list(state["retry"]), "retry": []}


def finish(state: RegionState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    entry = runtime.context.region_entry(state["region"], state.get("outcome", {}), state.get("attempts", []))
    return {"results": [entry]}


def report(state: WorkflowState, runtime: Runtime[WorkflowRun]) -> dict[str, Any]:
    path = runtime.context.write_report(state.get("regions", []), state.get("results", []), state.get("errors", []))
    return {"report": str(path)}
