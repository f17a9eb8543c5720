"""The optional LLM agents as plain functions: the coder (a region the compiler reports
unsupported), the fixer (a translation that failed to build or validate) and the optimizer
(a validated translation below the roofline fraction).

Every answer passes the same gate before it is trusted: one fenced code block, the static
anti-cheat check (``validation.anticheat``; for Python also the syntax-tree allowlist of
``validation.pyaudit``), then the region's validation on fresh secret
seeds (never the compiler's, never derived from the answer) plus the trials at other sizes; the optimizer's
answers are also timed, in turns with the current version, and a speedup above 10x is
flagged (or rejected when the answer's own timings disagree). Each role has a cap of LLM
calls (``agent.attempts``); every attempt goes in the report with its status, reason, tokens
and cost.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from graph import optimize_steps as opt
from graph.agent_config import AgentConfig
from graph.llm import BudgetExceeded, LLMClient, LLMError, LLMSettings, Usage, extract_code
from graph.optimize_steps import time_in_turns
from graph.report import target_entry
from targets.base import TARGETS, get_renderer
from translate import ir
from translate.schedule import Schedule
from validation.anticheat import CheatContext, check
from validation.pyaudit import audit

PROMPTS = Path(__file__).resolve().parents[1] / "graph" / "prompts"
TITLES = {name: t.title for name, t in TARGETS.items()}
LANGUAGES = {name: t.fence for name, t in TARGETS.items()}
CONVENTIONS = {
    "kokkos": "- `NAME_kokkos(...)` takes `Kokkos::View`s (LayoutLeft for Fortran arrays) in the default memory "
              "space and runs with `parallel_for` / `parallel_reduce`.\n"
              "- `extern \"C\" kt_NAME(...)` (the C ABI shim) copies the host arrays in and out; it is given.",
    "cuda": "- `NAME_cuda(...)` takes device pointers and a `cudaStream_t` and enqueues `__global__` kernels on "
            "that stream; every CUDA call is checked with `KT_CUDA_CHECK`.\n"
            "- `extern \"C\" kt_NAME(...)` (the C ABI shim) copies the host arrays in and out; it is given.\n"
            "- Write the kernels yourself: CUB and Thrust device-wide algorithms load the driver at run time "
            "(dlopen), which the check of what an answer calls refuses.",
    "triton": "- `NAME(...)` is the launcher: arrays are 1-D contiguous torch tensors holding the source arrays "
              "linearised column-major (Fortran order), scalars are Python values; it writes arrays in place and "
              "returns a dict of out/inout scalars and \"result\" for a function value.\n"
              "- The computation runs in `@triton.jit` kernels; the launcher may only allocate and launch.",
}
ANSWER_LIMIT = 60_000  # characters of code accepted from one answer


@dataclass(frozen=True)
class Verdict:
    """The gate's decision on one answer."""

    # "validated" | "pending" (it compiled; nothing here can run it: `translate check` on a machine
    # that can decides) | "failed" | "rejected"
    status: str
    reason: str | None = None
    details: str = ""  # condensed errors for the fixer

    @property
    def accepted(self) -> bool:
        """Accepted means validated: an answer that only compiled is not."""
        return self.status == "validated"

    @property
    def kept(self) -> bool:
        """Whether the answer ends the conversation and stays in the output: validated, or
        pending (no further answer could be judged here either)."""
        return self.status in ("validated", "pending")


def prompt(template: str, **fields: str) -> str:
    """A prompt file of graph/prompts with its ``$fields`` filled in."""
    return Template((PROMPTS / f"{template}.md").read_text()).substitute(fields)


def client_for(cfg: AgentConfig, cache_dir: Path, usage: Usage) -> LLMClient:
    """The LLM client of a workflow's agent section (replies cached under ``cache_dir``)."""
    assert cfg.enabled and cfg.model is not None
    settings = LLMSettings(model=cfg.model, provider=cfg.provider, base_url=cfg.base_url,
                           api_key_env=cfg.api_key_env, timeout_s=cfg.timeout_s, retries=cfg.retries,
                           max_tokens_per_run=cfg.max_tokens, max_cost_usd=cfg.max_cost_usd,
                           price_in_per_mtok=cfg.price_in_per_mtok, price_out_per_mtok=cfg.price_out_per_mtok)
    return LLMClient(settings, cache_dir, usage)


def candidate_file(out_dir: Path, target: str, name: str) -> Path:
    """Where a target's translation of ``name`` lives (CONVENTIONS.md)."""
    ext = TARGETS[target].extension
    return out_dir / target / f"{name}_{target}.{ext}"


def answer_seed() -> int:
    """A fresh secret validation seed for one answer: nothing in the answer (its text, a comment
    changed until a constant output matches) can choose its test data; the other sizes are drawn
    from it too (``validation.region.other_deltas``)."""
    return 10_000 + secrets.randbelow(2**30)


def condense(reason: str | None, limit: int = 1500) -> str:
    """The part of a failure a fixer needs: the first compiler error lines, else the reason's head."""
    # the trial's seed and drawn sizes stay in the report; the next validation draws new ones
    text = re.sub(r", seed \d+", "", reason or "unknown failure")
    errors = [ln.strip() for ln in text.splitlines() if re.search(r"\berror\b|Error|mismatch|NaN|rel", ln)]
    picked = "\n".join(errors[:12]) if errors else text
    return picked[:limit]


def arguments(kernel: ir.Kernel) -> str:
    """One line per parameter: name, type, shape and intent, then the function result."""
    lines = []
    for p in kernel.params:
        if isinstance(p, ir.Array):
            dims = ", ".join(str(d) for d in p.shape)
            lines.append(f"- `{p.name}`: {p.dtype.value} array ({dims}), intent {p.intent.value}")
        else:
            lines.append(f"- `{p.name}`: {p.dtype.value} scalar, intent {p.intent.value}")
    if kernel.result is not None:
        lines.append(f"- function result: {kernel.result.value}")
    return "\n".join(lines)


def attempt_entry(role: str, target: str, n: int, verdict: Verdict, tokens: int = 0, cost: float = 0.0,
                  cached: bool = False) -> dict[str, Any]:
    return {"role": role, "target": target, "attempt": n, "status": verdict.status, "reason": verdict.reason,
            "tokens": tokens, "cost_usd": round(cost, 6), "cached": cached}


def converse(client: LLMClient, role: str, name: str, target: str, first: str, cap: int, ctx: CheatContext,
             judge: Callable[[str], Verdict], follow_up: Callable[[str, Verdict], str],
             progress: Callable[[str], None]) -> tuple[str | None, Verdict | None, list[dict[str, Any]]]:
    """Up to ``cap`` LLM calls in one conversation: each answer gated (code block, anti-cheat,
    ``judge``); a rejected or failed one is answered with ``follow_up`` (the fixer's prompt).
    Returns the first accepted code and its verdict (or None) and every attempt."""
    messages = [{"role": "system", "content": (PROMPTS / "system.md").read_text()},
                {"role": "user", "content": first}]
    attempts: list[dict[str, Any]] = []
    for n in range(1, cap + 1):
        try:
            reply = client.complete(messages, purpose=f"{role}:{name}:{target}")
        except (BudgetExceeded, LLMError) as err:
            attempts.append(attempt_entry(role, target, n, Verdict("error", f"LLM call failed: {err}")))
            progress(f"{name}: {target} {role} stopped: {err}")
            break
        code = extract_code(reply.text, LANGUAGES[target])
        if code is None:
            verdict = Verdict("rejected", "the answer has no fenced code block")
        elif len(code) > ANSWER_LIMIT:
            verdict = Verdict("rejected", f"the answer's code is longer than {ANSWER_LIMIT} characters")
        else:
            found = [f"{v.rule} at line {v.line}: {v.reason}" for v in check(code, ctx)]
            if LANGUAGES[target] == "python":
                found += [f"outside-allowlist at line {line}: {why}" for line, why in audit(code)]
            verdict = Verdict("rejected", "; ".join(found)) if found else judge(code)
        attempts.append(attempt_entry(role, target, n, verdict, reply.prompt_tokens + reply.completion_tokens,
                                      reply.cost_usd, reply.cached))
        progress(f"{name}: {target} {role} attempt {n}: {verdict.status}"
                 + (f" ({verdict.reason[:160]})" if verdict.reason and not verdict.accepted else ""))
        if verdict.kept and code is not None:
            return code, verdict, attempts
        messages += [{"role": "assistant", "content": reply.text},
                     {"role": "user", "content": follow_up(code or reply.text, verdict)}]
    return None, None, attempts


def fixer_prompt(target: str, name: str, origin: str, code: str, verdict: Verdict) -> str:
    """The fixer's prompt for one failed or rejected version."""
    failure = {"rejected": "was rejected before it ran:", "failed": "failed:"}.get(verdict.status, "failed:")
    return prompt("fixer", target_title=TITLES[target], name=name, origin=origin, failure=failure,
                  details=verdict.details or condense(verdict.reason), language=LANGUAGES[target], code=code)


# ------------------------------------------------------------------ the roles, over a WorkflowRun


def _gate_context(run: Any, name: str, target: str) -> CheatContext:
    cfg = run.workflow.region(name)
    sizes = tuple(v for v in cfg.sizes.values() if isinstance(v, int)) if isinstance(cfg.sizes, dict) else ()
    return CheatContext(target, (name,), sizes, replaces_torch=run.workflow.language == "pytorch")


def _judge(run: Any, name: str, kernel: ir.Kernel, target: str, path: Path) -> Callable[[str], Verdict]:
    """Writes an answer where the target's file lives and validates it on seeds of its own."""

    def judge(code: str) -> Verdict:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code if code.endswith("\n") else code + "\n")
        tv = run.validate_written(name, kernel, target, answer_seed())
        if tv.status == "compiled":
            return Verdict("pending", f"{tv.reason or 'compiled'}: pending until validated where it can run "
                                      f"(`translate check OUT --targets {target}` on a machine with a GPU)")
        details = condense(tv.reason) if tv.status != "validated" else ""
        return Verdict(tv.status if tv.status == "validated" else "failed", tv.reason or None, details)

    return judge


def code_region(run: Any, name: str, targets: list[str]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The coder on a region the compiler reports unsupported: per target, up to ``coder``
    conversations of 1 + ``fixer`` calls, starting from the skeleton the renderer makes of the
    routine's signature (its shim and launcher with an empty body)."""

    opaque = run.opaque(name)
    kernel = opaque.signature
    cfg = run.workflow.agent
    client = run.agent_client()
    outcome: dict[str, dict[str, Any]] = {}
    attempts: list[dict[str, Any]] = []
    for target in targets:
        rendered = get_renderer(target, Schedule()).render(kernel, Schedule())
        path = candidate_file(run.out_dir, target, name)
        entry = name if target == "triton" else f"{name}_{target}"
        first = prompt("coder", name=name, origin=str(opaque.origin), target_title=TITLES[target],
                       reason=opaque.reason, source_language="fortran", source=opaque.source,
                       conventions=CONVENTIONS[target].replace("NAME", name), entry=entry,
                       arguments=arguments(kernel), language=LANGUAGES[target], skeleton=rendered.source)
        rendered.write(run.out_dir)  # the interface module and build files; the answer replaces the skeleton
        code, verdict = None, None
        for _ in range(max(cfg.cap("coder"), 0)):
            code, verdict, tries = converse(
                client, "coder", name, target, first, 1 + cfg.cap("fixer"), _gate_context(run, name, target),
                _judge(run, name, kernel, target, path),
                lambda c, v, t=target: fixer_prompt(t, name, str(opaque.origin), c, v), run.progress)
            attempts += tries
            if code is not None:
                break
        if code is not None and verdict is not None:
            outcome[target] = target_entry(verdict.status, verdict.reason, files=run.target_files(name, target),
                                           schedule="written by the LLM agent")
        else:
            for p in rendered.files:
                (run.out_dir / p).unlink(missing_ok=True)
            last = next((a["reason"] for a in reversed(attempts) if a["target"] == target), None)
            tried = sum(a["target"] == target for a in attempts)
            outcome[target] = target_entry("unsupported", f"{opaque.reason}; the LLM agent's {tried} attempts "
                                           f"were not accepted (last: {last})" if tried else opaque.reason)
    return outcome, attempts


def fix_targets(run: Any, name: str, outcome: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]],
                                                                               list[dict[str, Any]]]:
    """The fixer on the compiler's translations that failed at every schedule level."""

    kernel = run.analysed(name)
    cfg = run.workflow.agent
    client = run.agent_client()
    fixed: dict[str, dict[str, Any]] = {}
    attempts: list[dict[str, Any]] = []
    for target, entry in outcome.items():
        path = candidate_file(run.out_dir, target, name)
        if entry.get("status") != "failed" or not path.is_file() or cfg.cap("fixer") <= 0:
            continue
        original = path.read_text()
        verdict = Verdict("failed", entry.get("reason"))
        first = fixer_prompt(target, name, str(kernel.origin), original, verdict)
        code, verdict, tries = converse(
            client, "fixer", name, target, first, cfg.cap("fixer"), _gate_context(run, name, target),
            _judge(run, name, kernel, target, path),
            lambda c, v, t=target: fixer_prompt(t, name, str(kernel.origin), c, v), run.progress)
        attempts += tries
        if code is not None and verdict is not None:
            fixed[target] = target_entry(verdict.status, verdict.reason, files=run.target_files(name, target),
                                         schedule=f"{entry.get('schedule', '')}, fixed by the LLM agent".lstrip(", "))
        else:
            path.write_text(original)  # the compiler's version stays, with its failure
    return fixed, attempts


SUSPICIOUS_SPEEDUP = 10.0  # over the current version: flagged for a person to look at
MIN_GAIN = 1.05  # an optimizer answer must be this much faster to replace the files


def _history(entry: dict[str, Any]) -> str:
    rows = [f"- {h.get('variant')}: {h['time_s'] * 1e3:.3f} ms" if h.get("time_s") else
            f"- {h.get('variant')}: {h.get('status', 'not timed')}" for h in entry.get("search", [])]
    return "\n".join(rows) or "- none"


def time_side_by_side(time: Callable[[], float], path: Path, current: str) -> tuple[list[float], list[float]]:
    """Seconds of the answer now in ``path`` and of the ``current`` version, timed in turns
    (``graph.optimize_steps.time_in_turns``), each written to ``path`` before its turn; the
    answer is back in ``path`` on return, whatever happens."""

    answer = path.read_text()

    def timed(text: str) -> float:
        path.write_text(text)
        return time()

    try:
        times = time_in_turns({"answer": lambda: timed(answer), "current": lambda: timed(current)})
    finally:
        path.write_text(answer)
    return times["answer"], times["current"]


def optimize_targets(run: Any, name: str, outcome: dict[str, dict[str, Any]],
                     slow: list[str]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The optimizer on validated targets still below the roofline fraction after the schedule
    search: each answer validated, then timed in turns with the current version at the profiling
    sizes (a time measured earlier, under another load, is no yardstick); the answer replaces the
    files when its best time beats the current version's by 5%. Every timed call is made on fresh
    inputs and its results checked (``graph.optimize_steps.time_untrusted``). An answer over
    10x faster is timed again on new inputs: rejected when its own timings disagree by more than
    20% or the speedup is not reproduced; kept otherwise, with ``suspicious_speedup`` in the report
    for a person to look at."""

    kernel = run.analysed(name)
    pc, ref_s = run.profiler.profile_case_of(name)
    cfg = run.workflow.agent
    client = run.agent_client()
    found: dict[str, dict[str, Any]] = {}
    attempts: list[dict[str, Any]] = []
    for target in slow:
        entry = outcome[target]
        path = candidate_file(run.out_dir, target, name)
        if cfg.cap("optimizer") <= 0 or not path.is_file() or not entry.get("time_s"):
            continue
        original, best_s = path.read_text(), float(entry["time_s"])
        timings: dict[str, float] = {}

        def judge(code: str, target: str = target, path: Path = path, original: str = original,
                  timings: dict[str, float] = timings) -> Verdict:
            verdict = _judge(run, name, kernel, target, path)(code)
            if verdict.status != "validated":
                return verdict
            try:
                answers, currents = time_side_by_side(lambda: run.profiler.time_written(name, target), path, original)
            except Exception as exc:
                return Verdict("failed", f"timing failed: {type(exc).__name__}: {exc}"[:300])
            seconds, before = min(answers), min(currents)
            if before / seconds > SUSPICIOUS_SPEEDUP:
                # too fast to be true: timed again on new inputs (every timed call is checked);
                # a speedup that does not come back is rejected
                try:
                    again, currents2 = time_side_by_side(lambda: run.profiler.time_written(name, target), path,
                                                         original)
                except Exception as exc:
                    return Verdict("failed", f"timing failed: {type(exc).__name__}: {exc}"[:300])
                speedup, speedup2 = before / seconds, min(currents2) / min(again)
                if max(answers) - seconds > 0.2 * seconds or speedup2 < speedup / 1.2:
                    seen = ", then ".join(f"{s:.3g} s" for s in [*answers, *again])
                    return Verdict("rejected", f"a {speedup:.1f}x speedup that was not reproduced on new inputs "
                                               f"({speedup2:.1f}x; the answer's times: {seen})")
                timings["suspicious"] = 1.0
            if before / seconds < MIN_GAIN:
                return Verdict("failed", f"not faster: {seconds * 1e3:.3f} ms against {before * 1e3:.3f} ms "
                                         "(best of each, timed in turns)",
                               details=f"Your version took {seconds * 1e3:.3f} ms; the current one "
                                       f"{before * 1e3:.3f} ms, timed in turns with yours.")
            timings["seconds"], timings["before"] = seconds, before
            return verdict

        first = prompt("optimizer", target_title=TITLES[target], name=name, origin=str(kernel.origin),
                       profile=(f"{best_s * 1e3:.3f} ms, {entry.get('gbps') or 0:.1f} GB/s, "
                                f"{entry.get('gflops') or 0:.2f} GFLOP/s, "
                                f"{(entry.get('fraction_of_peak') or 0) * 100:.0f}% of the roofline"),
                       history=_history(entry), language=LANGUAGES[target], code=original)
        code, verdict, tries = converse(
            client, "optimizer", name, target, first, cfg.cap("optimizer"), _gate_context(run, name, target), judge,
            lambda c, v, t=target: fixer_prompt(t, name, str(kernel.origin), c, v), run.progress)
        attempts += tries
        if code is None or "seconds" not in timings:
            path.write_text(original)
            continue
        fields = opt.measured(target, kernel, pc, timings["seconds"], ref_s, "written by the LLM optimizer")
        found[target] = {**entry, **fields, "time_before_agent_s": timings["before"],
                         "schedule": f"{entry.get('schedule', '')}, optimized by the LLM agent".lstrip(", "),
                         **({"suspicious_speedup": True} if "suspicious" in timings else {})}
        run.progress(f"{name}: {target} LLM optimizer: {timings['before'] * 1e3:.3f} -> "
                     f"{timings['seconds'] * 1e3:.3f} ms (timed in turns)")
    return found, attempts
