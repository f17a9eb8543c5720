"""The profile and optimize stages of a workflow run: time every validated target of a region
at its profiling sizes against the reference and the machine's ceilings, and search schedule
variants for the slow ones (``graph.optimize_steps`` does the work). One timed region at a
time: concurrent timings disturb each other."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph import optimize_steps as opt
from targets.base import get_renderer
from translate.schedule import Schedule
from validation.ceilings import device_name

if TYPE_CHECKING:
    from graph.pipeline import WorkflowRun


class RegionProfiler:
    """The run's profiling state: the lock that keeps timings apart and each profiled region's
    case and reference time."""

    def __init__(self, run: WorkflowRun) -> None:
        self.run = run
        self._timing = threading.Lock()
        self._profiles: dict[str, tuple[Any, float | None]] = {}  # region -> (ProfileCase, reference seconds)

    def profile(self, name: str, outcome: dict[str, dict[str, Any]], level: int) -> dict[str, dict[str, Any]]:
        """Time the reference and every validated target that runs on this machine at the
        profiling sizes (graph.optimize_steps); the changed target entries. PyTorch
        regions are timed by benchmarks/torch_bench.py instead."""

        ready = [t for t, e in outcome.items() if e.get("status") == "validated" and opt.runs_here(t)]
        if name in self.run.torch_regions or not ready:
            return {}
        kernel = self.run.analysed(name)
        out: dict[str, dict[str, Any]] = {}
        with self._timing:
            try:
                wf = self.run.workflow
                pc = opt.profile_case(kernel, wf.region(name), wf.optimize, wf.root)
                ref_s = opt.time_reference(self.run.reference_build(), kernel, pc, self._profile_dir(name))
            except Exception as exc:  # profiling never fails a validated region
                return {t: {**outcome[t], "profile_error": f"{type(exc).__name__}: {exc}"[:300]} for t in ready}
            self._profiles[name] = (pc, ref_s)
            for t in ready:
                try:
                    if "LLM agent" in str(outcome[t].get("schedule", "")):  # an LLM's code: timed untrusted
                        seconds = self._time_untrusted(name, t, pc)
                    else:
                        seconds = opt.time_target(t, self.run.out_dir / t, kernel, pc, self.run.cache_dir,
                                                  self._profile_dir(name))
                    fields = opt.measured(t, kernel, pc, seconds, ref_s, self.run.schedule(level).variant())
                    out[t] = {**outcome[t], **fields}
                except Exception as exc:
                    out[t] = {**outcome[t], "profile_error": f"{type(exc).__name__}: {exc}"[:300]}
                    continue
                e = out[t]
                frac = f", {e['fraction_of_peak'] * 100:.0f}% of the roofline" if e["fraction_of_peak"] else ""
                vs = f", {e['speedup']:.2f}x the reference" if e["speedup"] else ""
                self.run.progress(f"{name}: {t} {e['time_s'] * 1e3:.3f} ms{vs}{frac}")
        return out

    def _profile_dir(self, name: str) -> Path:
        return self.run.out_dir / ".build" / name / "profile"

    def slow_targets(self, outcome: dict[str, dict[str, Any]]) -> list[str]:
        """Profiled targets below the workflow's fraction of the roofline (the optimize step's work)."""
        cfg = self.run.workflow.optimize
        if not cfg.enabled:
            return []
        return [t for t, e in outcome.items()
                if e.get("fraction_of_peak") is not None and e["fraction_of_peak"] < cfg.fraction]

    def optimize(self, name: str, outcome: dict[str, dict[str, Any]], level: int) -> dict[str, dict[str, Any]]:
        """The variant search for each slow target; the winner's files replace the output's."""

        if name not in self._profiles:
            return {}
        kernel = self.run.analysed(name)
        pc, ref_s = self._profiles[name]
        cache = opt.ResultCache(self.run.cache_dir / "profile")
        current = self.run.schedule(level)
        scratch = self.run.out_dir / ".build" / name / "variants"
        out: dict[str, dict[str, Any]] = {}
        for t in self.slow_targets(outcome):
            e = outcome[t]
            device = device_name("gpu" if t in opt.GPU_TARGETS else "cpu")

            def check(folder: Path, sch: Schedule, t: str = t) -> tuple[str, str | None]:
                r = self.run.run_validation(name, {t: folder}, sch.level, record_golden=False).targets[t]
                return r.status, r.reason or None

            def timer(folder: Path, t: str = t) -> float:
                return opt.time_target(t, folder, kernel, pc, self.run.cache_dir, self._profile_dir(name))

            self.run.progress(f"{name}: {t} at {e['fraction_of_peak'] * 100:.0f}% of the roofline: trying "
                          f"{self.run.workflow.optimize.budget} schedule variants")
            with self._timing:
                found = opt.search(t, kernel, pc, current, e["time_s"], self.run.workflow.optimize.budget,
                                   scratch, cache, device, check, timer)
            best = found.best
            entry = {**e, "search": found.history}
            if best != current:
                get_renderer(t, best).render(kernel, best).write(self.run.out_dir)
                entry.update(opt.measured(t, kernel, pc, found.best_s, ref_s, best.variant()))
                entry.update(schedule=best.describe(), time_before_search_s=found.before_s)
                self.run.progress(f"{name}: {t} {best.variant()} wins: {found.before_s * 1e3:.3f} -> "
                              f"{found.best_s * 1e3:.3f} ms (timed in turns)")
            else:
                self.run.progress(f"{name}: {t} keeps {current.variant()} (no variant was faster)")
            out[t] = entry
        return out

    def profile_case_of(self, name: str) -> tuple[Any, float | None]:
        """The profiling case and reference seconds of a profiled region."""
        return self._profiles[name]

    def time_written(self, name: str, target: str) -> float:
        """Seconds of the target's current files at the region's profiling sizes: an LLM's code,
        so timed untrusted (``optimize_steps.time_untrusted``: sandboxed, this process's clock,
        fresh inputs per call, every timed call's results checked)."""

        with self._timing:
            return self._time_untrusted(name, target, self._profiles[name][0])

    def _time_untrusted(self, name: str, target: str, pc: Any) -> float:

        kernel = self.run.analysed(name)
        cfg, vcfg = self.run.workflow.region(name), self.run.workflow.validate
        cases = opt.timing_cases(kernel, cfg, self.run.workflow.optimize, self.run.workflow.root, pc)
        return opt.time_untrusted(target, self.run.out_dir / target, kernel, cases, self.run.reference_build(),
                                  self.run.cache_dir, self._profile_dir(name) / "agent", vcfg.tolerance)
