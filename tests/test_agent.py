"""The LLM agents end to end: a workflow whose arithmetic-IF routine the compiler reports unsupported is
translated by the coder through a scripted OpenAI-compatible server on localhost, every answer
gated by the anti-cheat check and validated; cheating answers are rejected, each with its rule."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from graph.cli import run_workflow
from graph.config import load
from graph.profiling import RegionProfiler
from tests.llm_server import ScriptedLLMServer

# the examples' search written with an arithmetic IF, which the compiler refuses
SEARCH = """      INTEGER FUNCTION IFIRST(N, X, T)
      INTEGER N
      DOUBLE PRECISION X(*), T
      INTEGER I
      I = 0
   10 I = I + 1
      IF (I - N) 30, 30, 20
   30 IF (X(I).LE.T) GO TO 10
      IFIRST = I
      RETURN
   20 IFIRST = N + 1
      RETURN
      END
"""
KEY_ENV = "KT_TEST_AGENT_KEY"
SECRET = "sk-agent-test-5e1d"

CORRECT = '''```python
import torch
import triton
import triton.language as tl


@triton.jit
def ifirst_kernel(x_ptr, t, n, out_ptr, BLOCK: tl.constexpr):
    # the smallest 1-based index i with x(i) > t, or n + 1: a min-reduction over blocks
    best = n + 1
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        hit = (offs < n) & (x > t)
        cand = tl.where(hit, offs + 1, n + 1)
        best = tl.minimum(best, tl.min(cand, axis=0))
    tl.store(out_ptr, best)


def ifirst(n: int, x: torch.Tensor, t: float, *, block: int = 256) -> dict[str, object]:
    out = torch.empty(1, dtype=torch.int32, device=x.device)
    ifirst_kernel[(1,)](x, t, n, out, BLOCK=block)
    return {"result": int(out.item())}
```'''

# the same kernel returning a 0-based index: wrong on every input
OFF_BY_ONE = CORRECT.replace("cand = tl.where(hit, offs + 1, n + 1)", "cand = tl.where(hit, offs, n + 1)")


def _launcher(body: str, imports: str = "") -> str:
    return f'''```python
import torch
{imports}

def ifirst(n: int, x: torch.Tensor, t: float, *, block: int = 256) -> dict[str, object]:
{body}
```'''


CHEATS = {
    "calls-reference": _launcher("    import ctypes\n    lib = ctypes.CDLL('libsearch.so')\n"
                                 "    return {'result': lib.ifirst_(n, x, t)}"),
    "fallback": _launcher("    try:\n        return {'result': 1}\n    except Exception:\n"
                          "        return {'result': n + 1}"),
    "timing-trick": _launcher("    time.sleep(0.001)\n    return {'result': n + 1}", "import time"),
    "hard-coded-shape": _launcher("    return {'result': 3 if n == 200 else n + 1}"),
    "hard-coded-output": _launcher("    with open('out/search/golden/ifirst/expected.txt') as f:\n"
                                   "        return {'result': int(f.read())}"),
}


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def _project(tmp: Path, agent: str) -> Path:
    (tmp / "src").mkdir(parents=True)
    (tmp / "src" / "search.f").write_text(SEARCH)
    (tmp / "workflows.yaml").write_text(f"""workflows:
  search:
    language: fortran
    sources: [src/search.f]
    targets: [triton]
    sizes: {{n: 200}}
    validate: {{trials: 2}}
    agent: {agent}
    output: out/search
    regions:
      ifirst:
        shapes: {{x: [n]}}
""")
    return tmp


def _run(project: Path) -> dict:
    cfg = load(project)
    run_workflow(project, cfg.workflows["search"], None, resume=False)
    report = json.loads((project / "out" / "search" / "report.json").read_text())
    return next(r for r in report["regions"] if r["name"] == "ifirst")


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer([]) as s:
        yield s


def _agent(server: ScriptedLLMServer, coder: int = 1, fixer: int = 3, **more: int) -> str:
    caps = ", ".join(f"{role}: {n}" for role, n in {"coder": coder, "fixer": fixer, **more}.items())
    return (f"{{provider: openai, model: scripted, base_url: '{server.base_url}', api_key_env: {KEY_ENV}, "
            f"attempts: {{{caps}}}}}")


@pytest.mark.slow
def test_without_provider_the_arithmetic_if_region_stays_unsupported(tmp_path: Path) -> None:
    region = _run(_project(tmp_path, "{provider: none}"))
    assert region["status"] == "unsupported"
    assert "arithmetic IF" in region["reason"]
    assert region["targets"]["triton"]["status"] == "unsupported"


@pytest.mark.slow
def test_coder_translates_arithmetic_if_region_after_rejections(tmp_path: Path, server: ScriptedLLMServer,
                                                       api_key: str) -> None:
    server.add(CHEATS["calls-reference"], "no code here, sorry", OFF_BY_ONE, CORRECT)
    region = _run(_project(tmp_path, _agent(server)))
    assert region["status"] == "translated" and region["translated_by"] == "llm agent"
    assert "arithmetic IF" in region["reason"]  # the compiler's reason is kept
    assert region["targets"]["triton"]["status"] == "validated"
    statuses = [(a["role"], a["status"]) for a in region["attempts"]]
    assert statuses == [("coder", "rejected"), ("coder", "rejected"), ("coder", "failed"), ("coder", "validated")]
    reasons = [a["reason"] for a in region["attempts"]]
    assert reasons[0].startswith("calls-reference")
    assert "no fenced code block" in reasons[1]
    assert reasons[2]  # the validation's mismatch
    assert server.completions == 4
    # the fixer's turns carry the previous failure; the key never reaches a prompt
    bodies = json.dumps(server.requests)
    assert SECRET not in bodies
    assert "calls-reference" in server.requests[1]["messages"][-1]["content"]
    code = (tmp_path / "out" / "search" / "triton" / "ifirst_triton.py").read_text()
    assert "offs + 1" in code
    # a rerun is served from the reply cache where the conversation is the same: the answers before
    # the first validation; the validation after draws new secret seeds, so what follows a failed
    # validation may differ (its mismatch depends on the data) and is asked again
    server.add(CORRECT)
    region = _run(tmp_path)
    assert region["targets"]["triton"]["status"] == "validated"
    assert [a["cached"] for a in region["attempts"]][:3] == [True, True, True]
    assert server.completions <= 5


@pytest.mark.slow
def test_each_cheat_is_rejected_with_its_own_rule(tmp_path: Path, server: ScriptedLLMServer, api_key: str) -> None:
    server.add(*CHEATS.values())
    region = _run(_project(tmp_path, _agent(server, coder=1, fixer=len(CHEATS) - 1)))
    assert region["status"] == "unsupported"  # the agent found no acceptable translation
    assert region["targets"]["triton"]["status"] == "unsupported"
    rules = [a["reason"].split(" ")[0] for a in region["attempts"]]
    assert rules == list(CHEATS)
    assert all(a["status"] == "rejected" for a in region["attempts"])
    assert not (tmp_path / "out" / "search" / "triton" / "ifirst_triton.py").exists()


@pytest.mark.slow
def test_constant_answer_fails_validation(tmp_path: Path, server: ScriptedLLMServer, api_key: str) -> None:
    """An answer the static check cannot see through (a constant result) fails on the data."""
    server.add(_launcher("    return {'result': n + 1}"))
    region = _run(_project(tmp_path, _agent(server, coder=1, fixer=0)))
    assert [a["status"] for a in region["attempts"]] == ["failed"]
    assert region["targets"]["triton"]["status"] == "unsupported"


MATMUL = """      SUBROUTINE MMLIKE(M, N, K, A, B, C)
      INTEGER M, N, K
      DOUBLE PRECISION A(M, K), B(K, N), C(M, N)
      INTEGER I, J, L
      DO 30 J = 1, N
         DO 20 I = 1, M
            C(I, J) = 0.0D0
            DO 10 L = 1, K
               C(I, J) = C(I, J) + A(I, L)*B(L, J)
   10       CONTINUE
   20    CONTINUE
   30 CONTINUE
      END
"""


def _run_one(tmp: Path, source: str, text: str, settings: str, agent: str, region: str) -> dict:
    """Writes ``src/<source>`` and a one-workflow ``workflows.yaml`` (``settings``: its
    indented keys), runs it and returns ``region``'s entry of the report."""
    (tmp / "src").mkdir(exist_ok=True)
    (tmp / "src" / source).write_text(text)
    (tmp / "workflows.yaml").write_text(f"""workflows:
  search:
    language: fortran
    sources: [src/{source}]
{settings}    agent: {agent}
    output: out/search
""")
    run_workflow(tmp, load(tmp).workflows["search"], None, resume=False)
    report = json.loads((tmp / "out" / "search" / "report.json").read_text())
    return next(r for r in report["regions"] if r["name"] == region)


MM_SETTINGS = """    targets: [kokkos]
    sizes: {m: 30, n: 20, k: 10}
    validate: {trials: 1}
    optimize: {budget: 1, fraction: 1.0, sizes: {m: 120, n: 100, k: 80}}
"""


@pytest.mark.slow
def test_optimizer_answers_are_gated_and_timed(tmp_path: Path, server: ScriptedLLMServer, api_key: str) -> None:
    """A cheating answer is rejected; a correct one that is slower (the product run four times over)
    is not taken; the files stay."""
    _run_one(tmp_path, "mm.f", MATMUL, MM_SETTINGS, "{provider: none}", "mmlike")
    generated = (tmp_path / "out" / "search" / "kokkos" / "mmlike_kokkos.cpp").read_text()
    call = "    mmlike_loop1(m, n, k, a, b, c);\n"
    assert call in generated
    slower = generated.replace(call, "    for (int rep = 0; rep < 4; ++rep) {\n    " + call + "    }\n")
    server.add("```cpp\n#include <chrono>\n" + generated + "\n```", "```cpp\n" + slower + "\n```")
    region = _run_one(tmp_path, "mm.f", MATMUL, MM_SETTINGS, _agent(server, optimizer=2), "mmlike")
    tries = [(a["role"], a["status"]) for a in region["attempts"] if a.get("role") == "optimizer"]
    assert tries == [("optimizer", "rejected"), ("optimizer", "failed")]
    reasons = [a["reason"] for a in region["attempts"] if a.get("role") == "optimizer"]
    assert reasons[0].startswith("timing-trick") and reasons[1].startswith("not faster")
    assert (tmp_path / "out" / "search" / "kokkos" / "mmlike_kokkos.cpp").read_text() == generated


VADD = """      SUBROUTINE VADD(N, A, X, Y)
      INTEGER N
      DOUBLE PRECISION A, X(N), Y(N)
      INTEGER I
      DO 10 I = 1, N
         Y(I) = Y(I) + A*X(I)
   10 CONTINUE
      END
"""


@pytest.mark.slow
def test_fixer_repairs_a_compiler_translation_that_failed(tmp_path: Path, server: ScriptedLLMServer,
                                                          api_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiler's Triton kernel is broken on purpose (a planted sign error at every schedule
    level): validation fails, the fixer gets the file and the mismatch, a cheating answer is
    rejected, the repaired file validates and is kept, and the report says the agent fixed it."""
    from dataclasses import replace

    from targets.triton import TritonRenderer

    render = TritonRenderer.render

    def broken(self: TritonRenderer, kernel: object, schedule: object = None) -> object:
        out = render(self, kernel, schedule)  # type: ignore[arg-type]
        return replace(out, files={p: t.replace("(a * tl.load(x", "(-a * tl.load(x") for p, t in out.files.items()})

    monkeypatch.setattr(TritonRenderer, "render", broken)
    settings = "    targets: [triton]\n    sizes: {n: 100}\n    validate: {trials: 2}\n"

    def run(agent: str) -> dict:
        return _run_one(tmp_path, "vadd.f", VADD, settings, agent, "vadd")

    path = tmp_path / "out" / "search" / "triton" / "vadd_triton.py"
    region = run("{provider: none}")
    assert region["targets"]["triton"]["status"] == "failed"  # the planted error is caught
    wrong = path.read_text()
    assert "(-a * tl.load(x" in wrong
    fixed = wrong.replace("(-a * tl.load(x", "(a * tl.load(x")
    cheat = fixed.replace("def vadd(", "import time\n\n\ndef vadd(")
    cheat = cheat.replace('    """', '    time.sleep(0)\n    """', 1)
    broken_syntax = fixed.replace("def vadd(", "def vadd((", 1)  # does not even parse
    server.add(f"```python\n{cheat}\n```", f"```python\n{broken_syntax}\n```", f"```python\n{fixed}\n```")
    region = run(_agent(server, coder=0, fixer=3, optimizer=0))
    assert region["targets"]["triton"]["status"] == "validated"
    assert "fixed by the LLM agent" in region["targets"]["triton"]["schedule"]
    agent = [a for a in region["attempts"] if a.get("role")]  # the compiler's schedule levels come first
    assert [(a["role"], a["status"]) for a in agent] == [("fixer", "rejected"), ("fixer", "rejected"),
                                                          ("fixer", "validated")]
    assert agent[0]["reason"].startswith("timing-trick")
    assert "does not parse: invalid syntax" in agent[1]["reason"]  # refused before it runs, with where
    assert "does not parse" in server.requests[2]["messages"][-1]["content"]  # and the next turn is told
    first = server.requests[0]["messages"][-1]["content"]
    assert "(-a * tl.load(x" in first  # the failed file went to the fixer, with why it failed
    assert "mismatch" in first.lower() or "error" in first.lower()
    assert path.read_text().strip() == fixed.strip()


@pytest.mark.slow
@pytest.mark.parametrize(("second", "again"), [(0.004, 250.0), (0.1, 250.0), (0.004, 2.0)])
def test_a_tenfold_speedup_is_timed_again(tmp_path: Path, server: ScriptedLLMServer, api_key: str,
                                          monkeypatch: pytest.MonkeyPatch, second: float, again: float) -> None:
    """An optimizer answer timed at more than 10x faster than the current version (both timed in
    turns) is timed again on new inputs: kept and flagged ``suspicious_speedup`` when its timings
    agree and the speedup comes back; rejected when its timings disagree or the speedup is not
    reproduced. (The timings are stood in for: a genuine tenfold answer is not something a test
    can script.)"""

    def run(agent: str) -> dict:
        return _run_one(tmp_path, "mm.f", MATMUL, MM_SETTINGS, agent, "mmlike")

    before = run("{provider: none}")["targets"]["kokkos"]["time_s"]
    generated = (tmp_path / "out" / "search" / "kokkos" / "mmlike_kokkos.cpp").read_text()
    # in turns: the answer, the current version, the answer again, the current version again; then
    # the same on new inputs
    timings = iter([before / 250, before, before * second, before,
                    before / again, before, before / again, before])

    monkeypatch.setattr(RegionProfiler, "time_written", lambda self, name, target: next(timings))
    server.add("```cpp\n" + generated + "\n```")
    region = run(_agent(server, optimizer=1))
    (attempt,) = [a for a in region["attempts"] if a.get("role") == "optimizer"]
    kk = region["targets"]["kokkos"]
    if second < 0.01 and again > 100:  # 250x, then 250x within 20%, twice: taken, and flagged
        assert attempt["status"] == "validated"
        assert kk["suspicious_speedup"] is True and "optimized by the LLM agent" in kk["schedule"]
    else:
        assert attempt["status"] == "rejected"
        assert attempt["reason"].startswith("a 250.0x speedup that was not reproduced on new inputs")
        assert "suspicious_speedup" not in kk
