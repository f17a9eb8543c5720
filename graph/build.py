"""The LangGraph StateGraph of a workflow run, checkpointed in SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graph import nodes
from graph.pipeline import WorkflowRun
from graph.state import RegionState, WorkflowState


def region_graph() -> StateGraph:
    """translate -> validate -> (retry -> translate)* -> finish, one per region."""
    g = StateGraph(RegionState, context_schema=WorkflowRun)
    g.add_node("code", nodes.code)
    g.add_node("fix", nodes.fix)
    g.add_node("translate", nodes.translate)
    g.add_node("validate", nodes.validate)
    g.add_node("retry", nodes.retry)
    g.add_node("profile", nodes.profile)
    g.add_node("optimize", nodes.optimize)
    g.add_node("finish", nodes.finish)
    g.add_conditional_edges(START, nodes.route_start, ["code", "translate"])
    g.add_edge("code", "finish")
    g.add_edge("translate", "validate")
    g.add_conditional_edges("validate", nodes.route_after_validate, ["retry", "fix", "profile"])
    g.add_edge("fix", "profile")
    g.add_edge("retry", "translate")
    g.add_conditional_edges("profile", nodes.route_after_profile, ["optimize", "finish"])
    g.add_edge("optimize", "finish")
    g.add_edge("finish", END)
    return g


def workflow_graph() -> StateGraph:
    g = StateGraph(WorkflowState, context_schema=WorkflowRun)
    g.add_node("plan", nodes.parse_and_plan)
    g.add_node("region", region_graph().compile())
    g.add_node("report", nodes.report)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", nodes.fan_out, ["region", "report"])
    g.add_edge("region", "report")
    g.add_edge("report", END)
    return g


def checkpointer(project: Path) -> SqliteSaver:
    """A SqliteSaver in ``<project>/.translate/checkpoints.sqlite``."""
    folder = project / ".translate"
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / "checkpoints.sqlite", check_same_thread=False)
    return SqliteSaver(conn)


def compile_graph(saver: SqliteSaver | None) -> CompiledStateGraph:
    return workflow_graph().compile(checkpointer=saver)
