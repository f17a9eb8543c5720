"""`translate`: the command line.

    translate run PROJECT [--workflow W]... [--targets kokkos,triton] [--resume] [--strict]
    translate doctor [--measure | --remeasure] [--gpu | --cpu]   # toolchains; the machine's ceilings
    translate parse FILE... [-I DIR] [-D N=V]   # the IR and loop analysis of Fortran and C files (.c)
    translate check OUT --targets cuda,triton   # re-validate generated code against golden data

Exit status of ``run``: 0 when no region named under ``regions:`` is unsupported or has
a failed target; 1 when one has, or a name under ``regions:`` is no routine of the
sources (with ``--strict``: when any region or target is unsupported or failed, or a
file did not parse); 2 for a bad workflows.yaml; 3 when a workflow stopped on an
internal error (the others still ran); 130 when interrupted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from graph.config import TARGETS, ConfigError, load
from graph.pipeline import WorkflowRun
from parsers.base import ParseError
from parsers.c import parse_files as parse_c_files
from parsers.c_clang import C_SUFFIXES
from parsers.fortran import parse_files
from translate import ir
from translate.analysis import analyze, loop_report
from validation import ceilings as ce
from validation import sandbox, stopping
from validation.atomic import write_atomic
from validation.golden import main as golden_main
from validation.toolchains import detect, format_table

# the signals that stop a run as Ctrl-C does: what `timeout`, CI runners and batch schedulers send,
# and a terminal that closes
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _targets(text: str | None) -> list[str] | None:
    if not text:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in TARGETS]
    if bad:
        raise SystemExit(f"translate: unknown target(s) {', '.join(bad)}; choose from {', '.join(TARGETS)}")
    return names


def _runs_file(project: Path) -> Path:
    return project / ".translate" / "runs.json"


class RunError(Exception):
    """A run that cannot start or continue, with a message for the user."""


def settings_key(workflow: Any, targets: list[str] | None) -> str:
    """A fingerprint of everything a run's results depend on: the workflow's settings and the
    targets asked for (``--resume`` refuses to mix results made under other settings)."""
    return hashlib.sha256(repr((workflow, targets)).encode()).hexdigest()[:16]


def _read_runs(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        runs = json.loads(path.read_text())
        if not isinstance(runs, dict):
            raise ValueError("not a JSON object")
        return runs
    except (OSError, ValueError) as exc:
        raise RunError(f"{path} is damaged ({exc}): delete it (and checkpoints.sqlite beside it) to start "
                       "over") from None


def _thread_for(project: Path, workflow: Any, targets: list[str] | None, resume: bool) -> tuple[str, bool]:
    """The checkpoint thread of this run and whether it continues an earlier one."""
    path = _runs_file(project)
    runs = _read_runs(path)
    key = settings_key(workflow, targets)
    earlier = runs.get(workflow.name)
    if resume and earlier is not None:
        if isinstance(earlier, str):
            earlier = {"thread": earlier}  # written before settings were recorded: they cannot be compared
        thread, before = earlier.get("thread"), earlier.get("settings")
        if before != key:
            raise RunError(f"cannot resume workflow {workflow.name}: its settings or targets changed since its last "
                           "run (results made under both would be mixed); run it without --resume "
                           "to start over")
        return str(thread), True
    thread = f"{workflow.name}:{uuid.uuid4().hex[:12]}"
    runs[workflow.name] = {"thread": thread, "settings": key}
    write_atomic(path, json.dumps(runs, indent=2))
    return thread, False


def run_workflow(project: Path, workflow: Any, targets: list[str] | None, resume: bool) -> dict[str, Any]:
    # deferred: langgraph takes a second to import, which the commands that do not run a workflow skip
    from graph.build import checkpointer, compile_graph

    run = WorkflowRun(workflow, project, targets)
    _check_output(run, project)
    thread, continuing = _thread_for(project, workflow, targets, resume)
    try:
        saver = checkpointer(project)
        graph = compile_graph(saver)
        config = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
        if continuing:
            snapshot = graph.get_state(config)
            if not snapshot.next:
                run.progress(f"nothing to resume: the last run finished; report at {snapshot.values.get('report')}")
                return dict(snapshot.values)
            run.progress(f"resuming run {thread} at {', '.join(snapshot.next)}")
            return graph.invoke(None, config, context=run, durability="sync")
        run.progress(f"run {thread}: targets {', '.join(run.targets)}; output {run.out_dir}")
        return graph.invoke({"workflow": workflow.name}, config, context=run, durability="sync")
    except sqlite3.DatabaseError as exc:
        raise RunError(f"the checkpoint database {project / '.translate' / 'checkpoints.sqlite'} is damaged "
                       f"({exc}): delete it to start over") from None
    except stopping.Interrupted:
        _partial_report(run, graph, config)
        raise


def _check_output(run: Any, project: Path) -> None:
    """The output folder can be written (a clear error before any work if not); one outside the
    project folder is written, with a warning."""
    out = Path(run.out_dir)
    if out.exists() and not out.is_dir():
        raise RunError(f"the output folder {out} is a file: move it away or name another output")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".kt-write-test-"):
            pass
    except OSError as exc:
        raise RunError(f"the output folder {out} cannot be written: {exc.strerror or exc}") from None
    if not out.resolve().is_relative_to(project.resolve()):
        run.progress(f"warning: the output folder {out} is outside the project folder {project}")


def _partial_report(run: Any, graph: Any, config: dict[str, Any]) -> None:
    """The report of an interrupted run: the regions that finished, and what is left."""
    try:
        regions = graph.get_state(config).values.get("regions", [])
    except Exception:  # the report of an interrupted run is a courtesy; the checkpoint is what counts
        regions = []
    if regions:
        done = run.finished()
        run.write_report(regions, done, [f"interrupted: {len(done)} regions finished; `translate run --resume` "
                                         "runs the rest"])


def cmd_run(args: argparse.Namespace) -> int:

    project = Path(args.project).resolve()
    try:
        cfg = load(project)
    except ConfigError as err:
        print(f"translate: {err}", file=sys.stderr)
        return 2
    names = args.workflow or list(cfg.workflows)
    try:
        workflows = [cfg.workflow(n) for n in names]
    except ConfigError as err:
        print(f"translate: {err}", file=sys.stderr)
        return 2
    targets = _targets(args.targets)
    named_bad: list[str] = []
    any_bad = crashed = 0
    stopping.clear()
    previous = {sig: signal.signal(sig, _on_signal) for sig in STOP_SIGNALS}
    try:
        for wf in workflows:
            try:
                final = run_workflow(project, wf, targets, args.resume)
            except (stopping.Interrupted, KeyboardInterrupt):
                print(f"translate: interrupted: what finished is saved; `translate run {args.project} --resume` "
                      "continues", file=sys.stderr)
                return 130
            except RunError as err:
                print(f"translate: {err}", file=sys.stderr)
                return 2
            except Exception as exc:  # one workflow's crash never stops the others, nor prints a traceback
                crashed += 1
                print(f"translate: workflow {wf.name} stopped by an internal error: {type(exc).__name__}: {exc}"
                      f" (the other workflows go on; `--resume` continues this one after a fix)", file=sys.stderr)
                continue
            bad, named = _tally(wf, final)
            any_bad += bad
            named_bad += named
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if named_bad:
        print(f"translate: named regions unsupported or failed: {', '.join(named_bad)}", file=sys.stderr)
    if crashed:
        return 3
    return 1 if named_bad or (any_bad and args.strict) else 0


def _on_signal(signum: int, frame: Any) -> None:
    """Ctrl-C, SIGTERM (timeout, CI runners, batch schedulers) or SIGHUP (a closed terminal): stop
    the run (workers killed, nothing half-done recorded); a second signal quits at once (the
    children die with the process)."""
    if stopping.requested():
        os._exit(130)
    stopping.request_stop()
    print(f"\ntranslate: {signal.Signals(signum).name}: stopping the run (Ctrl-C again to quit at once)",
          file=sys.stderr, flush=True)


def _tally(wf: Any, final: dict[str, Any]) -> tuple[int, list[str]]:
    """How many regions, targets and errors of a finished workflow are bad, and the named ones among them."""
    errors = final.get("errors", [])
    any_bad = len(errors)
    named_bad = [f"{wf.name}: {e}" for e in errors if "regions: '" in e]
    report = final.get("report")
    if report:
        doc = json.loads(Path(report).read_text())
        for region in doc["regions"]:
            statuses = [t["status"] for t in region["targets"].values()]
            bad = region["status"] == "unsupported" or "failed" in statuses
            any_bad += bad or "unsupported" in statuses
            if bad and wf.has_region(region["name"]):
                named_bad.append(f"{wf.name}: {region['name']}")
    return any_bad, named_bad


def cmd_doctor(args: argparse.Namespace) -> int:

    tools = detect()
    print(format_table(tools))
    have = {t.name: t.available for t in tools}
    print()
    print(f"kokkos: {'validated here' if have.get('kokkos') and have.get('g++') else 'cannot be validated here'}")
    cuda = "runs here" if have.get("cuda-gpu") and have.get("nvcc") else (
        "compiled only (no GPU)" if have.get("nvcc") else "not available (no nvcc)")
    print(f"cuda:   {cuda}")
    print(f"triton: {'runs on the GPU' if have.get('cuda-gpu') else 'runs in the interpreter (CPU)'}")
    print(f"reference (Fortran): {'f2py + gfortran' if have.get('gfortran') and have.get('f2py') else 'unavailable'}")

    probe = sandbox.probe()
    print(f"sandbox: {probe.detail}" if probe.available else
          f"sandbox: unavailable: {probe.detail}; LLM answers are not run, compiler output runs unsandboxed")
    print()
    return _doctor_ceilings(args)


def _doctor_ceilings(args: argparse.Namespace) -> int:
    """The measured ceilings: measured (or loaded) with --measure, else whatever is cached."""

    device = "gpu" if args.gpu else "cpu" if args.cpu else "auto"
    try:
        if args.measure or args.remeasure:
            found = ce.load_or_measure(remeasure=args.remeasure, device=device)
            print(ce.format_ceilings(found, ce.cache_path(found.device)))
            return 0
        kind = ce.resolve(device)
        kinds = ["gpu", "cpu"] if device == "auto" and kind == "gpu" else [kind]
    except RuntimeError as err:
        print(f"ceilings: {err}", file=sys.stderr)
        return 1
    for kind in kinds:
        name = ce.device_name(kind)
        cached = ce.load_cached(name)
        print(ce.format_ceilings(cached, ce.cache_path(name)) if cached else
              f"ceilings of {name}: not measured; run `translate doctor --measure --{kind}` "
              f"(caches them in {ce.cache_path(name)})")
    return 0


def cmd_parse(args: argparse.Namespace) -> int:

    paths = [Path(p) for p in args.files]
    errors: list[ParseError] = []
    include = [Path(i) for i in args.include]
    defines = dict(d.partition("=")[::2] for d in args.define)
    c_files = [p for p in paths if p.suffix in C_SUFFIXES]
    modules = parse_files([p for p in paths if p not in c_files], Path.cwd(), include, defines, errors=errors) \
        if len(c_files) < len(paths) else []
    modules += parse_c_files(c_files, Path.cwd(), include, defines, errors=errors) if c_files else []
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    for module in modules:
        for k in module.kernels:
            if isinstance(k, ir.Opaque):
                print(f"{k.name}: unsupported: {k.reason}\n")
                continue
            analysed = analyze(k)
            print(ir.dump(analysed))
            for loop in loop_report(analysed):
                print(f"  loop {loop['var']} (line {loop['line']}): {loop['kind']}: {loop['reason']}")
            print()
    return 1 if errors else 0


def cmd_check(args: argparse.Namespace) -> int:

    argv = [args.out] + (["--targets", args.targets] if args.targets else [])
    return golden_main(argv)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="translate", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the workflows of a project folder (its workflows.yaml)")
    run.add_argument("project", nargs="?", default=".")
    run.add_argument("--workflow", action="append", help="run only this workflow (repeatable)")
    run.add_argument("--targets", help="comma-separated subset of kokkos,cuda,triton")
    run.add_argument("--resume", action="store_true", help="continue the last, interrupted run")
    run.add_argument("--strict", action="store_true",
                     help="exit 1 if any region or target failed or is unsupported, or a file did not parse")
    run.set_defaults(func=cmd_run)
    doctor = sub.add_parser("doctor", help="which toolchains and backends are usable here, and why not")
    doctor.add_argument("--measure", action="store_true", help="measure the ceilings (or load them if cached)")
    doctor.add_argument("--remeasure", action="store_true", help="measure the ceilings again, replacing the cache")
    which = doctor.add_mutually_exclusive_group()
    which.add_argument("--gpu", action="store_true", help="the ceilings of the CUDA GPU")
    which.add_argument("--cpu", action="store_true", help="the ceilings of the CPU (default: the GPU if any)")
    doctor.set_defaults(func=cmd_doctor)
    parse = sub.add_parser("parse", help="print the IR and loop analysis of Fortran and C files")
    parse.add_argument("files", nargs="+")
    parse.add_argument("-I", "--include", action="append", default=[])
    parse.add_argument("-D", "--define", action="append", default=[], help="NAME=VALUE for the preprocessor")
    parse.set_defaults(func=cmd_parse)
    check = sub.add_parser("check", help="re-validate an output folder's kernels against its golden data")
    check.add_argument("out")
    check.add_argument("--targets", default=None)
    check.set_defaults(func=cmd_check)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("translate: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: a message, never a traceback
        print(f"translate {args.command}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
