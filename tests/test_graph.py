"""Graph routing and the retry edge, with a scripted run context (no builds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from graph import nodes
from graph.build import workflow_graph
from graph.report import target_entry


class ScriptedRun:
    """Stands in for graph.pipeline.WorkflowRun: 'b' fails until level 2."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.written: list[dict[str, Any]] = []
        self.profiler = self  # the profile and optimize stages (graph.profiling.RegionProfiler)

    def progress(self, message: str) -> None:
        pass

    def plan(self) -> tuple[list[dict[str, Any]], list[str]]:
        regions = [
            {"name": n, "source": "src/x.f", "line": i + 1, "status": "translated", "reason": None,
             "targets": ["kokkos", "triton"], "loops": []}
            for i, n in enumerate(["a", "b"])
        ]
        regions.append({"name": "c", "source": "src/x.f", "line": 9, "status": "unsupported",
                        "reason": "GO TO at src/x.f:9", "targets": ["kokkos", "triton"], "loops": []})
        return regions, ["src/bad.f:3: syntax error (file skipped)"]

    def render(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        self.calls += [("render", f"{name}/{t}", level) for t in targets]
        return {t: target_entry("rendered") for t in targets}

    def validate(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        self.calls += [("validate", f"{name}/{t}", level) for t in targets]
        ok = name == "a" or level == 2
        return {t: target_entry("validated" if ok else "failed", None if ok else "off by one") for t in targets}

    def profile(self, name: str, outcome: dict[str, Any], level: int) -> dict[str, Any]:
        """Kokkos of 'a' is slow (20% of its roofline); everything else is fast."""
        self.calls.append(("profile", name, level))
        return {t: {**e, "time_s": 1.0, "fraction_of_peak": 0.2 if (name, t) == ("a", "kokkos") else 0.9}
                for t, e in outcome.items() if e["status"] == "validated"}

    def slow_targets(self, outcome: dict[str, Any]) -> list[str]:
        return [t for t, e in outcome.items() if e.get("fraction_of_peak", 1.0) < 0.5]

    def optimize(self, name: str, outcome: dict[str, Any], level: int) -> dict[str, Any]:
        self.calls.append(("optimize", name, level))
        found = [{"variant": "as analysed, block 256", "time_s": 1.0}]
        return {t: {**outcome[t], "time_s": 0.4, "variant": "outermost loop parallel only, block 256",
                    "search": found} for t in self.slow_targets(outcome)}

    def region_entry(self, region: dict[str, Any], outcome: dict[str, Any], attempts: list[Any]) -> dict[str, Any]:
        return {"name": region["name"], "targets": outcome, "attempts": attempts}

    def write_report(self, regions: list[Any], results: list[dict[str, Any]], errors: list[str]) -> Path:
        self.written = results
        return Path("report.json")


def test_route_after_validate_caps_retries() -> None:
    assert nodes.route_after_validate({"retry": ["kokkos"], "level": 0}) == "retry"
    assert nodes.route_after_validate({"retry": ["kokkos"], "level": 2}) == "profile"
    assert nodes.route_after_validate({"retry": [], "level": 0}) == "profile"


def test_route_after_validate_gives_failures_to_the_fixer_once() -> None:
    failed = {"retry": ["kokkos"], "level": 2, "outcome": {"kokkos": target_entry("failed", "off by one")}}
    assert nodes.route_after_validate({**failed, "region": {"fixer": True}}) == "fix"
    assert nodes.route_after_validate({**failed, "region": {"fixer": True}, "fixed": True}) == "profile"
    assert nodes.route_after_validate({**failed, "region": {"fixer": False}}) == "profile"
    assert nodes.route_start({"region": {"agent": True}}) == "code"
    assert nodes.route_start({"region": {"name": "a"}}) == "translate"


def test_fan_out_skips_unsupported_regions() -> None:
    run = ScriptedRun()
    regions, _ = run.plan()
    sends = nodes.fan_out({"regions": regions})
    assert [s.arg["region"]["name"] for s in sends] == ["a", "b"]
    assert nodes.fan_out({"regions": regions[2:]}) == "report"


def test_graph_retries_failed_region_with_more_conservative_schedule() -> None:
    run = ScriptedRun()
    graph = workflow_graph().compile(checkpointer=InMemorySaver())
    final = graph.invoke({"workflow": "w"}, {"configurable": {"thread_id": "t"}}, context=run)
    by_name = {r["name"]: r for r in final["results"]}
    assert set(by_name) == {"a", "b"}
    assert all(e["status"] == "validated" for e in by_name["a"]["targets"].values())
    assert all(e["status"] == "validated" for e in by_name["b"]["targets"].values())
    # 'a' validated at level 0 only; 'b' tried at levels 0, 1 and 2
    assert {lvl for op, what, lvl in run.calls if what.startswith("a/")} == {0}
    assert {lvl for op, what, lvl in run.calls if what == "b/kokkos" and op == "validate"} == {0, 1, 2}
    assert [a["level"] for a in by_name["b"]["attempts"] if a["target"] == "kokkos"] == [0, 1, 2]
    assert final["errors"] == ["src/bad.f:3: syntax error (file skipped)"]
    assert final["report"] == "report.json"
    # every region is profiled once validation is over; only the slow target is optimized
    assert sorted((op, w) for op, w, _ in run.calls if op in ("profile", "optimize")) == \
        [("optimize", "a"), ("profile", "a"), ("profile", "b")]
    assert by_name["a"]["targets"]["kokkos"]["time_s"] == 0.4 and by_name["a"]["targets"]["kokkos"]["search"]
    assert by_name["a"]["targets"]["triton"]["time_s"] == 1.0 and "search" not in by_name["a"]["targets"]["triton"]


class InterruptedRun(ScriptedRun):
    """Region 'b' is killed in validation (as by Ctrl-C) until ``armed`` is cleared."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = True

    def validate(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        if name == "b" and self.armed:
            import time

            time.sleep(0.5)  # let 'a' finish first
            raise KeyboardInterrupt
        return super().validate(name, targets, level)


def test_resume_after_interrupt_does_not_redo_validated_regions(tmp_path: Path) -> None:
    from graph.build import checkpointer, compile_graph

    run = InterruptedRun()
    config = {"configurable": {"thread_id": "w:1"}}
    graph = compile_graph(checkpointer(tmp_path))
    try:
        graph.invoke({"workflow": "w"}, config, context=run, durability="sync")
    except KeyboardInterrupt:
        pass
    else:  # pragma: no cover - the scripted run always interrupts
        raise AssertionError("the run was not interrupted")
    assert (tmp_path / ".translate" / "checkpoints.sqlite").exists()
    validated_before = [c for c in run.calls if c[0] == "validate" and c[1].startswith("a/")]
    assert validated_before, "region a should have been validated before the interrupt"

    run.armed = False
    run.calls.clear()
    graph = compile_graph(checkpointer(tmp_path))  # a new process would rebuild the graph
    assert graph.get_state(config).next, "the interrupted run has work left"
    final = graph.invoke(None, config, context=run, durability="sync")
    assert not [c for c in run.calls if c[1].startswith("a/")], "region a was redone"
    assert {r["name"] for r in final["results"]} == {"a", "b"}


class UnsupportedFirstRun(ScriptedRun):
    """kokkos cannot express region 'a' until level 1; 'b' has a broken reference."""

    def render(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        self.calls += [("render", f"{name}/{t}", level) for t in targets]
        return {t: target_entry("unsupported" if (t == "kokkos" and name == "a" and level == 0) else "rendered",
                                "two reductions in one nest") for t in targets}

    def validate(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        self.calls += [("validate", f"{name}/{t}", level) for t in targets]
        if name == "b":
            return {t: target_entry("failed", "reference build failed", retryable=False) for t in targets}
        return {t: target_entry("validated") for t in targets}


def test_unsupported_target_is_retried_and_reference_failures_are_final() -> None:
    run = UnsupportedFirstRun()
    graph = workflow_graph().compile(checkpointer=InMemorySaver())
    final = graph.invoke({"workflow": "w"}, {"configurable": {"thread_id": "t"}}, context=run)
    by_name = {r["name"]: r for r in final["results"]}
    assert by_name["a"]["targets"]["kokkos"]["status"] == "validated"
    assert ("validate", "a/kokkos", 1) in run.calls and ("validate", "a/triton", 1) not in run.calls
    assert {lvl for op, what, lvl in run.calls if what.startswith("b/")} == {0}
    assert by_name["b"]["targets"]["triton"]["status"] == "failed"
