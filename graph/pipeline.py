"""The plain-Python driver of one workflow: parse and plan the regions, render a
region for its targets, validate it, write the report. The LangGraph workflow
(graph/) calls these methods from its nodes; tests call them directly.

``WorkflowRun`` is the run context: it holds what one run needs (the workflow,
the parsed kernels, the shared reference build) and is never checkpointed.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from graph import c_headers
from graph.config import ConfigError, Workflow
from graph.profiling import RegionProfiler
from graph.program_steps import migrate_program
from graph.pytorch_steps import emit_model_new, load_regions, ops_entry
from graph.pytorch_steps import validate as validate_torch
from graph.report import region_entry, target_entry, write_reports
from graph.state import RegionJob
from graph.suite_steps import write_suite
from graph.yamlcheck import did_you_mean
from parsers.base import ParseError
from parsers.c import parse_files as parse_c_files
from parsers.fortran import parse_files
from targets.base import TARGETS, Unsupported, get_renderer
from targets.torch_module import host_plan, launcher_path
from translate import ir
from translate.analysis import analyze, loop_report
from translate.schedule import Schedule
from validation import sandbox
from validation.region import ReferenceSpec, TargetValidation, ValidationPlan, validate_region
from validation.runners import build_reference
from validation.secrets import redact

Printer = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class WorkflowRun:
    """One run of one workflow. Thread-safe: region nodes run concurrently."""

    def __init__(self, workflow: Workflow, project_root: Path, targets: list[str] | None = None,
                 printer: Printer = _stderr, timeout: float = 120.0, cache_dir: Path | None = None) -> None:
        self.workflow = workflow
        self.project_root = project_root.resolve()
        self.targets = [t for t in (targets or workflow.targets)]
        self.out_dir = workflow.output_dir.resolve()
        self.timeout = timeout
        self.cache_dir = cache_dir or self.project_root / ".translate" / "cache"
        self._print = printer
        self._lock = threading.Lock()
        self._print_lock = threading.Lock()  # progress lines, also from inside the loading under _lock
        self._kernels: dict[str, ir.Kernel | ir.Opaque] | None = None
        self._files: list[Path] = []  # the sources the frontend parsed
        self._all_files: list[Path] = []  # every source: the reference compiles what fparser cannot parse too
        self._reference: Any = None
        self.torch_regions: dict[str, Any] = {}  # PyTorch regions (graph.pytorch_steps.TorchRegion) by name
        self._notes: dict[str, dict[str, list[str]]] = {}  # Rendered.notes by region and target
        self._model_new: dict[str, tuple[str | None, str | None]] = {}  # ModelNew file or why not
        # writes ModelNew again: it carries the launcher, which an accepted agent answer replaces
        self._emit_model_new: dict[str, Callable[[], tuple[str | None, str | None]]] = {}
        self._analysed: dict[str, ir.Kernel] = {}  # region -> kernel with its loops decided
        self._llm: Any = None  # graph.llm.LLMClient of the agent, made on first use
        self._started = time.monotonic()
        self._done = 0
        self._finished: list[dict[str, Any]] = []  # report entries of the regions finished in this process
        self._total = 0
        self.profiler = RegionProfiler(self)  # the profile and optimize stages

    # ------------------------------------------------------------ progress

    def progress(self, message: str) -> None:
        elapsed = time.monotonic() - self._started
        with self._print_lock:
            message = redact(message, extra=[self.workflow.agent.api_key_env])  # a failure may quote a candidate
            self._print(f"[{self.workflow.name} {elapsed:6.1f}s] {message}")

    # ------------------------------------------------------------ parse/plan

    def _load(self) -> tuple[dict[str, ir.Kernel | ir.Opaque], list[str]]:
        """Parse the workflow's sources once (under the lock); errors are messages."""

        with self._lock:
            if self._kernels is not None:
                return self._kernels, []
            errors: list[str] = []
            kernels: dict[str, ir.Kernel | ir.Opaque] = {}
            try:
                self._files = self.workflow.files()
                self._all_files = list(self._files)
            except ConfigError as err:
                self._kernels = {}
                return {}, [str(err)]
            if self.workflow.language == "pytorch":
                self.torch_regions, errors = load_regions(self.workflow, self._files, progress=self.progress)
                self._kernels = {name: r.kernel for name, r in self.torch_regions.items()}
                return self._kernels, errors
            if self.workflow.language not in ("fortran", "c"):
                self._kernels = {}
                return {}, [f"workflow {self.workflow.name}: language '{self.workflow.language}' is not supported yet"]

            parse_errors: list[ParseError] = []
            if self.workflow.language == "c":
                modules = parse_c_files(self._files, self.workflow.root, self.workflow.include_dirs(),
                                        dict(self.workflow.preprocess.defines), errors=parse_errors)
            else:
                modules = parse_files(self._files, self.workflow.root, self.workflow.include_dirs(),
                                      dict(self.workflow.preprocess.defines), errors=parse_errors,
                                      flags=tuple(self.workflow.build.flags))
            errors += [f"{e} (file skipped)" for e in parse_errors]
            bad = {e.path for e in parse_errors}
            self._files = [f for f in self._files if _rel(f, self.workflow.root) not in bad and str(f) not in bad]
            for module in modules:
                for k in module.kernels:
                    if k.name in kernels:
                        first = kernels[k.name].origin
                        errors.append(f"{k.origin}: routine {k.name} is defined twice; keeping {first}")
                        continue
                    try:
                        if isinstance(k, ir.Opaque) and k.signature is not None:
                            k = ir.replace(k, signature=self._apply_region_config(k.signature))
                        kernels[k.name] = self._apply_region_config(k) if isinstance(k, ir.Kernel) else k
                    except ValueError as err:  # a shapes: entry this routine cannot take: this routine only
                        kernels[k.name] = ir.Opaque(k.name, "", f"workflows.yaml shapes: {err}", k.origin)
            self._kernels = kernels
            return kernels, errors

    def _apply_region_config(self, kernel: ir.Kernel) -> ir.Kernel:
        """Shapes given in the workflow (``shapes:``) replace the inferred ones; for an array whose
        extents the caller passes (assumed-shape, allocatable) they are the values validation
        passes."""
        shapes = self.workflow.region(kernel.name).shapes
        if not shapes:
            return kernel
        extent_of: dict[str, ir.Expr] = {}
        params = []
        for p in kernel.params:
            key = self.workflow.normalize(p.name)
            if isinstance(p, ir.Array) and key in shapes:
                dims = tuple(parse_extent(str(e), kernel) for e in shapes[key])
                passed = _passed_extents(kernel, p)
                if passed and len(dims) == p.rank:
                    extent_of.update(zip(passed, dims, strict=True))
                else:
                    p = ir.Array(p.name, p.dtype, dims, p.layout, p.intent, p.lower, p.binding)
            params.append(p)
        params = [ir.replace(p, default=extent_of[p.name]) if p.name in extent_of else p for p in params]
        return ir.Kernel(kernel.name, tuple(params), kernel.locals, kernel.body, kernel.origin, kernel.result,
                         kernel.notes)

    def opaque(self, name: str) -> ir.Opaque:
        """A region the compiler could not lower (with its signature, where declarable)."""
        kernels, _ = self._load()
        k = kernels[name]
        assert isinstance(k, ir.Opaque)
        return k

    def agent_client(self) -> Any:
        """The run's LLM client (``graph.llm.LLMClient``), made on first use; its usage is the run's."""
        # deferred: the OpenAI SDK takes most of a second to import, which a run without an agent skips
        from graph.agent_steps import client_for
        from graph.llm import Usage

        with self._lock:
            if self._llm is None:
                self._llm = client_for(self.workflow.agent, self.project_root / ".translate" / "llm", Usage())
            return self._llm

    def kernel(self, name: str) -> ir.Kernel:
        kernels, _ = self._load()
        k = kernels[name]
        assert isinstance(k, ir.Kernel)
        return k

    def plan(self) -> tuple[list[RegionJob], list[str]]:
        """Every routine with its loop analysis. Routines without loops that others call are
        inlined into their callers and listed as ``inlined`` (unless ``regions:`` names them);
        a name under ``regions:`` that is no routine of the sources is an error."""

        kernels, errors = self._load()
        errors = [*errors, *self._unknown_regions(kernels)]
        helpers = _helpers(kernels, self._files) if self.workflow.language == "fortran" else set()
        helpers = {h for h in helpers if not self.workflow.has_region(h)}

        agents = self.workflow.agent.enabled
        if not sandbox.probe().available:
            self.progress(f"warning: no sandbox here ({sandbox.probe().detail}): the compiler's translations "
                          "run unsandboxed")
        if agents and not sandbox.probe().available:
            agents = False  # an LLM's answer is code nobody has read: it runs in a sandbox or not at all
            errors.append(f"the LLM agent is configured but not run: its answers run only in a sandbox, and "
                          f"there is none here ({sandbox.probe().detail}; see translate doctor)")
        regions: list[RegionJob] = []
        for name, k in kernels.items():
            if name in helpers:
                regions.append({"name": name, "source": k.origin.path, "line": k.origin.line, "status": "inlined",
                                "reason": "no loops: inlined where it is called", "targets": [], "loops": []})
                continue
            if isinstance(k, ir.Opaque):
                regions.append({"name": name, "source": k.origin.path, "line": k.origin.line,
                                "status": "unsupported", "reason": k.reason, "targets": self.targets, "loops": [],
                                "agent": agents and k.signature is not None})
                continue
            try:
                analysed = self.analysed(name)
                loops = loop_report(analysed)
            except Exception as exc:  # an analysis bug fails this region only
                regions.append({"name": name, "source": k.origin.path, "line": k.origin.line,
                                "status": "unsupported", "reason": f"analysis failed: {exc}",
                                "targets": self.targets, "loops": []})
                continue
            regions.append({"name": name, "source": k.origin.path, "line": k.origin.line, "status": "translated",
                            "reason": None, "targets": self.targets, "loops": loops,
                            "fixer": agents,
                            **({"notes": list(k.notes)} if k.notes and name not in self.torch_regions else {})})
        for r in regions:  # for coverage counts: main programs apart, routines with loops apart
            k = kernels[r["name"]]
            r["kind"] = "program" if isinstance(k, ir.Opaque) and k.reason.startswith("PROGRAM ") else "routine"
            r["holds_loops"] = _holds_loops(k)
        self._total = sum(r["status"] == "translated" or bool(r.get("agent")) for r in regions)
        for r in regions:
            if r["status"] == "unsupported":
                to_agent = "; given to the LLM agent" if r.get("agent") else ""
                self.progress(f"{r['name']}: unsupported: {r['reason']}{to_agent}")
        found = sum(r["status"] != "inlined" for r in regions)
        self.progress(f"{found} regions ({self._total} translatable) in {len(self._files)} files"
                      + (f"; helpers inlined: {', '.join(sorted(helpers))}" if helpers else ""))
        for e in errors:
            self.progress(f"error: {e}")
        return regions, errors

    def _unknown_regions(self, kernels: dict[str, ir.Kernel | ir.Opaque]) -> list[str]:
        """A name under ``regions:`` that no routine of the sources has, with the closest names."""

        if self._files == [] or not kernels:
            return []
        out = []
        for name in self.workflow.regions:
            if name not in kernels:
                hint = did_you_mean(name, list(kernels))
                where = self.workflow.config_path or "workflows.yaml"
                line = self.workflow.key_lines.get(f"workflows.{self.workflow.name}.regions.{name}")
                out.append(f"{where}{f':{line}' if line else ''}: regions: '{name}' is not a routine of the"
                           f" workflow's sources{hint}")
        return out

    # ------------------------------------------------------------ render

    def analysed(self, name: str) -> ir.Kernel:
        """The kernel with its loops decided: the dependence analysis for source
        loops; PyTorch kernels come from the frontend with every loop decided by
        construction (independent output elements), which the analysis, seeing
        only index arithmetic such as ``i / n`` and ``i % n``, could not prove.
        The order audit of validation checks both kinds."""

        with self._lock:
            done = self._analysed.get(name)
        if done is not None:
            return done
        kernel = self.kernel(name)
        result = kernel if self.workflow.language == "pytorch" else analyze(kernel)
        with self._lock:  # analysed once: render, validate, profile and every variant use it
            return self._analysed.setdefault(name, result)

    def render(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        """Write each target's files for one region at a schedule level."""

        kernel = self.analysed(name)
        schedule = self.schedule(level)
        out: dict[str, dict[str, Any]] = {}
        for target in targets:
            try:
                rendered = get_renderer(target, schedule).render(kernel, schedule)
            except Unsupported as err:
                out[target] = target_entry("unsupported", f"{target} cannot express this region: {err}")
                self.progress(f"{name}: {target} unsupported: {err}")
                continue
            except Exception as exc:  # a renderer bug fails this region/target only
                out[target] = target_entry("failed", f"{target} renderer error: {type(exc).__name__}: {exc}")
                self.progress(f"{name}: {target} failed ({schedule.describe()}): renderer error: "
                              f"{type(exc).__name__}: {exc}")
                continue
            files = [str(p.relative_to(self.out_dir)) for p in rendered.write(self.out_dir)]
            out[target] = target_entry("rendered", None, files=files, schedule=schedule.describe())
            with self._lock:
                self._notes.setdefault(name, {})[target] = list(rendered.notes)
            if target == "triton" and name in self.torch_regions:
                emit = functools.partial(emit_model_new, kernel, self.torch_regions[name].path, self.out_dir,
                                         [*kernel.notes, *rendered.notes], rendered.symbol, self.torch_regions[name])
                made = emit()
                with self._lock:
                    self._model_new[name] = made
                    self._emit_model_new[name] = emit
        if self.workflow.language == "c":  # the shims' prototypes, and a drop-in for C callers
            c_headers.write(kernel, self.out_dir, self.workflow.root)
        return out

    # ------------------------------------------------------------ validate

    def _shared_reference(self) -> Any:
        """One reference build of the whole workflow, shared by its regions
        (None when it fails: each region then builds its own)."""

        with self._lock:
            if self._reference is None:
                kernels = [k for k in (self._kernels or {}).values() if isinstance(k, ir.Kernel)]
                build = build_reference(self._all_files, kernels, self.out_dir / ".build" / "reference",
                                        self.workflow.include_dirs(), dict(self.workflow.preprocess.defines),
                                        self.cache_dir, **self._reference_options())
                self._reference = build if build.ok else False
            return self._reference or None

    def _reference_options(self) -> dict[str, Any]:
        """The workflow's ``build:`` section as ``build_reference`` keywords."""
        b = self.workflow.build
        return {"extra_sources": self.workflow.build_files(), "fflags": b.flags, "cflags": b.cflags,
                "libraries": self.workflow.build_libraries(), "language": self.workflow.language}

    def reference_build(self) -> Any:
        """The workflow's reference build (``validation.runners.ReferenceBuild``), or None."""
        self._load()
        return self._shared_reference()

    def run_validation(self, name: str, dirs: dict[str, Path], level: int | None, reference: Any = None,
                        record_golden: bool = True, *, kernel: ir.Kernel | None = None,
                        workdir: Path | None = None, **extra: Any) -> Any:
        """``validation.region.validate_region`` of a Fortran region with the workflow's settings
        (``extra``: further fields of its ``ValidationPlan``). An Opaque region's kernel (its signature)
        is not wrapped by the workflow's shared reference build: the region builds its own."""

        opaque = isinstance(self._load()[0][name], ir.Opaque)
        cfg = self.workflow.region(name)
        vcfg = self.workflow.validate
        ref = ReferenceSpec(self._all_files, None if opaque else reference or self._shared_reference(),
                            include=self.workflow.include_dirs(), defines=dict(self.workflow.preprocess.defines),
                            options=self._reference_options())
        plan = ValidationPlan(cfg.sizes, cfg.values, dict(cfg.inputs or {}), vcfg.trials, tolerance=vcfg.tolerance,
                              schedule_level=level, project_dir=self.workflow.root, timeout=self.timeout,
                              reference=ref, **extra)
        return validate_region(kernel or self.analysed(name), dirs, plan, region=name,
                               workdir=workdir or self.out_dir / ".build" / name, cache_dir=self.cache_dir,
                               golden_root=self.out_dir / "golden" if record_golden else None)

    def validate_written(self, name: str, kernel: ir.Kernel, target: str, seed: int) -> Any:
        """Validation of a target file written by the agent (``validation.region.TargetValidation``):
        fresh secret seeds, the trials at other sizes, no order audit, its build's symbols checked;
        golden data recorded only for an Opaque region (the compiler's validation records it for
        the others)."""

        opaque = isinstance(self._load()[0][name], ir.Opaque)
        try:
            result = self.run_validation(name, {target: self.out_dir / target}, None, record_golden=opaque,
                                          kernel=kernel, workdir=self.out_dir / ".build" / name / "agent",
                                          seed=seed, reduces=True, untrusted=True)
        except Exception as exc:  # never let one answer stop the run
            return TargetValidation(target, "failed", f"validation error: {type(exc).__name__}: {exc}")
        return result.targets[target]

    def validate(self, name: str, targets: list[str], level: int) -> dict[str, dict[str, Any]]:
        kernel = self.analysed(name)
        self.progress(f"{name}: validating {', '.join(targets)} (schedule: {Schedule(level=level).describe()})")
        torch_region = self.torch_regions.get(name)
        reference = None if torch_region else self._shared_reference()  # None: the region builds its own
        try:
            if torch_region is not None:


                result = validate_torch(self.workflow, replace(torch_region, kernel=kernel),
                                        {t: self.out_dir / t for t in targets}, self.out_dir, self.cache_dir,
                                        self.timeout, level)
            else:
                result = self.run_validation(name, {t: self.out_dir / t for t in targets}, level, reference)
        except Exception as exc:  # never let one region stop the run
            return {t: target_entry("failed", f"validation error: {type(exc).__name__}: {exc}", retryable=False)
                    for t in targets}
        out: dict[str, dict[str, Any]] = {}
        for t in targets:
            tv = result.targets[t]
            status, reason = tv.status, tv.reason or None
            if status == "inconclusive":
                status, reason = "failed", f"inconclusive: {reason}"
            ran = status == "validated"
            # no schedule fixes a broken reference, bad inputs or an inconclusive comparison
            retryable = result.reference_ok and tv.status == "failed"
            out[t] = target_entry(status, reason, retryable=retryable, max_abs_err=tv.max_abs_err if ran else None,
                                  max_rel_err=tv.max_rel_err if ran else None,
                                  rel_l2_err=tv.rel_l2_err if ran else None, trials=tv.trials,
                                  files=self.target_files(name, t), schedule=Schedule(level=level).describe())
            detail = f" (rel L2 {tv.rel_l2_err:.1e}, {tv.trials} trials)" if ran else f": {reason}"
            self.progress(f"{name}: {t} {status}{detail}")
        return out

    # ------------------------------------------------------- profile/optimize

    def schedule(self, level: int, block: int = 256) -> Schedule:
        return Schedule(level=level, block=block, matmul_library=self.workflow.optimize.matmul == "library")

    def target_files(self, name: str, target: str) -> list[str]:
        """The region's files of one target, relative to the output folder."""
        folder = self.out_dir / target
        return sorted(str(p.relative_to(self.out_dir)) for p in folder.glob(f"{name}_*")) if folder.is_dir() else []

    # ------------------------------------------------------------ report

    def finished(self) -> list[dict[str, Any]]:
        """The report entries of the regions finished so far in this process (an interrupted run's report)."""
        with self._lock:
            return list(self._finished)

    def region_entry(self, region: dict[str, Any], outcome: dict[str, dict[str, Any]],
                     attempts: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            self._done += 1
            done, total = self._done, self._total
        statuses = ", ".join(f"{t} {e['status']}" for t, e in sorted(outcome.items()))
        self.progress(f"({done}/{total}) {region['name']}: {statuses}")
        targets = {t: {k: v for k, v in outcome.get(t, target_entry("failed", "not attempted")).items()
                       if k != "retryable"} for t in region["targets"]}
        extra: dict[str, Any] = {}
        if region["name"] in self.torch_regions:

            kernel = self.torch_regions[region["name"]].kernel
            with self._lock:
                notes = dict(self._notes.get(region["name"], {}))
                emit = self._emit_model_new.get(region["name"])
            if emit is not None:  # the launcher as the run leaves it (an agent's answer may have replaced it)
                made = emit()
                with self._lock:
                    self._model_new[region["name"]] = made
            with self._lock:
                model_file, why_not = self._model_new.get(region["name"], (None, "Triton was not rendered"))
            extra = {"ops": ops_entry(kernel, notes) if isinstance(kernel, ir.Kernel) else [],
                     "model_new": model_file, **({"model_new_reason": why_not} if why_not else {})}
            if model_file and isinstance(kernel, ir.Kernel):
                launcher = self.out_dir / launcher_path(kernel)
                extra["host_plan"] = host_plan(kernel, launcher.read_text() if launcher.is_file() else "")
        status = "translated"
        if region.get("agent"):  # the compiler's reason stays; the translation, if any, is the agent's
            accepted = any(e.get("status") in ("validated", "pending") for e in targets.values())
            status = "translated" if accepted else "unsupported"
            extra["translated_by"] = "llm agent" if accepted else None
        extra.update(kind=region.get("kind", "routine"), holds_loops=region.get("holds_loops"))
        if region.get("notes"):
            extra["notes"] = region["notes"]
        entry = region_entry(region["name"], region["source"], region["line"], status, region.get("reason"),
                             targets, loops=region.get("loops", []), attempts=attempts, **extra)
        with self._lock:
            self._finished.append(entry)
        return entry

    def write_report(self, regions: list[dict[str, Any]], results: list[dict[str, Any]],
                     errors: list[str]) -> Path:

        done = {r["name"]: r for r in results}
        entries = list(done.values())
        for r in regions:
            if r["status"] in ("unsupported", "inlined") and r["name"] not in done:
                targets = {t: target_entry("unsupported", r["reason"]) for t in r["targets"]}
                entries.append(region_entry(r["name"], r["source"], r["line"], r["status"], r["reason"], targets,
                                            kind=r.get("kind", "routine"), holds_loops=r.get("holds_loops")))
        for info in TARGETS.values():
            folder = self.out_dir / info.name
            sources = sorted(p.name for p in folder.glob(f"*.{info.extension}")) if folder.is_dir() else []
            if info.cmake is not None and sources:
                (folder / "CMakeLists.txt").write_text(info.cmake(self.workflow.name, sources))

        probe = sandbox.probe()
        notes = errors if probe.available else [*errors, f"warning: the translations ran without a sandbox: "
                                                          f"{probe.detail}"]
        try:
            suite = write_suite(self.workflow.name, self.out_dir, entries)
            if suite.get("folder"):
                self.progress(f"regression suite: {suite['folder']} (ctest, without Python)")
        except (OSError, ValueError, KeyError) as err:
            notes = [*notes, f"the regression suite could not be written: {err}"]
        program = None
        if self.workflow.program is not None:
            try:
                program = migrate_program(self.workflow, self.out_dir, entries, self.analysed, self.progress)
            except (OSError, ValueError, ConfigError) as err:
                program = {"name": self.workflow.program.name or self.workflow.name, "status": "failed",
                           "reason": str(err), "targets": {}}
        json_path, md_path = write_reports(self.out_dir, self.workflow.name, entries, notes, program,
                                          secret_names=[self.workflow.agent.api_key_env])
        self.progress(f"report: {md_path}")
        return json_path


def _holds_loops(k: ir.Kernel | ir.Opaque) -> bool:
    """Whether a routine holds a loop (an unsupported one: a DO in its Fortran source text, a
    for, while or do in its C source text)."""

    if isinstance(k, ir.Kernel):
        return any(isinstance(n, (ir.Loop, ir.While)) for s in k.body for n in ir.walk(s))
    if k.origin.path.endswith((".c", ".h")):
        return re.search(r"\b(for|while)\s*\(|\bdo\s*\{", k.source) is not None
    return re.search(r"^\s*(\d+\s+)?do\b", k.source, re.IGNORECASE | re.MULTILINE) is not None


def _passed_extents(kernel: ir.Kernel, array: ir.Array) -> list[str]:
    """The parameters holding an array's extents when the caller passes them (bound
    "extent:<array>:<k>"), else []."""
    names = [s.name for s in array.shape if isinstance(s, ir.Var)]
    if len(names) != array.rank:
        return []
    for k, n in enumerate(names):
        d = next((p for p in kernel.params if p.name == n), None)
        if not isinstance(d, ir.Scalar) or d.binding != f"extent:{array.name}:{k + 1}":
            return []
    return names


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _helpers(kernels: dict[str, ir.Kernel | ir.Opaque], files: list[Path]) -> set[str]:
    """Routines without loops that other routines of the workflow call (LSAME,
    XERBLA, small functions): the frontend inlines them; they are not regions."""

    text = "\n".join(p.read_text(errors="replace") for p in files).lower()
    found = set()
    for name, k in kernels.items():
        # a lowered routine without loops is inlined; calls to LSAME and XERBLA are built in
        # (a character comparison, an error report), whatever their own source holds
        if name not in ("lsame", "xerbla") and (
                isinstance(k, ir.Opaque) or any(isinstance(n, ir.Loop) for s in k.body for n in ir.walk(s))):
            continue
        word = re.escape(name)
        uses = len(re.findall(rf"\b{word}\s*\(", text)) + len(re.findall(rf"\bcall\s+{word}\b", text))
        definitions = len(re.findall(rf"\b(?:subroutine|function)\s+{word}\b", text))
        if uses > definitions:
            found.add(name)
    return found


def parse_extent(text: str, kernel: ir.Kernel) -> ir.Expr:
    """A shape extent from the workflow (``"lda"``, ``"1 + (n-1)*abs(incx)"``) as an IR expression."""
    i32 = ir.DType.I32
    names = {p.name.lower(): p for p in kernel.params}

    def conv(node: ast.AST) -> ir.Expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return ir.Const(node.value, i32)
        if isinstance(node, ast.Name):
            if node.id.lower() not in names:
                raise ValueError(f"shape '{text}' names '{node.id}', which is not an argument of {kernel.name}")
            return ir.Var(names[node.id.lower()].name, i32)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return ir.UnOp("neg", conv(node.operand), i32)
        if isinstance(node, ast.BinOp):
            ops = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "div", ast.Div: "div"}
            if type(node.op) in ops:
                return ir.BinOp(ops[type(node.op)], conv(node.left), conv(node.right), i32)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("abs", "max", "min"):
            return ir.Call(node.func.id, tuple(conv(a) for a in node.args), i32)
        raise ValueError(f"shape '{text}': cannot read '{ast.unparse(node)}' "
                         "(use integers, arguments, + - * / abs max min)")

    return conv(ast.parse(text, mode="eval").body)
