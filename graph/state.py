"""State schemas of the workflow graph. Everything in state is plain JSON-able
data so the SQLite checkpointer can store it; IR objects are rebuilt from the
sources by the run context when a node needs them."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


class WorkflowState(TypedDict, total=False):
    workflow: str
    regions: list[dict[str, Any]]  # one descriptor per region found by parse/plan
    errors: Annotated[list[str], operator.add]  # bad input, reported and skipped
    results: Annotated[list[dict[str, Any]], operator.add]  # report.json region entries
    report: str  # path of the written report.json


class RegionState(TypedDict, total=False):
    region: dict[str, Any]  # the descriptor from plan
    level: int  # schedule level (translate.schedule.Schedule.level)
    pending: list[str]  # targets to render and validate at this level
    retry: list[str]  # targets to try again at the next, more conservative level
    outcome: dict[str, dict[str, Any]]  # per-target report entries, best so far
    attempts: Annotated[list[dict[str, Any]], operator.add]  # every try, for the report
    fixed: bool  # the LLM fixer has had its turn
    results: Annotated[list[dict[str, Any]], operator.add]  # flows back to WorkflowState
