"""graph.llm against a real local HTTP server speaking the OpenAI chat-completions protocol."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from graph.llm import BudgetExceeded, LLMClient, LLMError, LLMSettings, Reply, Usage, extract_code
from tests.llm_server import Answer, ScriptedLLMServer

KEY_ENV = "KT_TEST_LLM_KEY"
SECRET = "sk-test-SECRET-7f3a9c2e1b"
MESSAGES = [
    {"role": "system", "content": "You translate Fortran loops to Triton."},
    {"role": "user", "content": "do i = 1, n\n  y(i) = a*x(i) + y(i)\nend do"},
]


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer([]) as s:
        yield s


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def make_client(
    server: ScriptedLLMServer, cache_dir: Path, usage: Usage | None = None, **overrides: object
) -> LLMClient:
    fields: dict[str, object] = {"model": "test-model", "base_url": server.base_url, "api_key_env": KEY_ENV}
    fields.update(overrides)
    settings = LLMSettings(**fields)  # type: ignore[arg-type]
    return LLMClient(settings, cache_dir, usage if usage is not None else Usage())


def test_reply_round_trip_tokens_and_cost(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer("```python\nx = 1\n```", prompt_tokens=1200, completion_tokens=300))
    usage = Usage()
    client = make_client(server, tmp_path, usage, price_in_per_mtok=3.0, price_out_per_mtok=15.0)
    reply = client.complete(MESSAGES, purpose="translate")
    assert reply == Reply("```python\nx = 1\n```", 1200, 300, pytest.approx(0.0081), False, "test-model")
    assert usage.to_dict() == {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "cost_usd": pytest.approx(0.0081),
        "calls": 1,
        "cached_calls": 0,
    }
    body = server.requests[0]
    assert body["model"] == "test-model" and body["messages"] == MESSAGES and body["temperature"] == 0.0
    # not api.openai.com: the field every compatible server honours
    assert body["max_tokens"] == 8192 and "max_completion_tokens" not in body
    assert server.paths == ["/v1/chat/completions"]


def test_unknown_prices_cost_zero_and_openai_uses_new_field(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer("ok", prompt_tokens=10, completion_tokens=2))
    client = make_client(server, tmp_path, token_param="max_completion_tokens", max_completion_tokens=77)
    assert client.complete(MESSAGES, purpose="t").cost_usd == 0.0
    assert server.requests[0]["max_completion_tokens"] == 77 and "max_tokens" not in server.requests[0]


def test_cache_hit_same_and_fresh_client(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer("answer one", prompt_tokens=50, completion_tokens=5), Answer("answer two"))
    usage = Usage()
    client = make_client(server, tmp_path, usage, price_in_per_mtok=1.0, price_out_per_mtok=1.0)
    first = client.complete(MESSAGES, purpose="translate")
    second = client.complete(MESSAGES, purpose="translate")
    assert server.completions == 1
    assert (second.text, second.cached, second.cost_usd, second.prompt_tokens) == ("answer one", True, 0.0, 50)
    assert first.cached is False and first.cost_usd == pytest.approx(55e-6)
    fresh_usage = Usage()
    fresh = make_client(server, tmp_path, fresh_usage)
    third = fresh.complete([dict(m) for m in MESSAGES], purpose="repair")
    assert (third.text, third.cached, server.completions) == ("answer one", True, 1)
    assert fresh_usage.to_dict()["calls"] == 0 and fresh_usage.to_dict()["cached_calls"] == 1
    assert usage.to_dict()["calls"] == 1 and usage.to_dict()["cached_calls"] == 1
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"{client.cache_key(MESSAGES)}.json"]  # no temp file left behind
    # anything in the key changes the key: another temperature misses the cache
    other = make_client(server, tmp_path, temperature=0.5)
    assert other.complete(MESSAGES, purpose="t").text == "answer two" and server.completions == 2


def test_500_then_success_retried(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer.error(500), Answer.error(429, "slow down"), Answer.error(503), Answer("fine"))
    client = make_client(server, tmp_path, retries=3)
    assert client.complete(MESSAGES, purpose="t").text == "fine"
    assert server.completions == 4


def test_retries_exhausted(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(*[Answer.error(502, "bad gateway")] * 8)
    client = make_client(server, tmp_path, retries=6)
    with pytest.raises(LLMError, match=r"failed after 7 attempts: HTTP 502") as info:
        client.complete(MESSAGES, purpose="t")
    assert server.completions == 7  # the first request and six retries, not one more
    assert info.value.status == 502 and info.value.attempts == 7
    assert list(tmp_path.iterdir()) == []  # failures are not cached


def test_400_not_retried(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer.error(400, "messages[1].content is too long"), Answer("never sent"))
    usage = Usage()
    client = make_client(server, tmp_path, usage)
    with pytest.raises(LLMError, match=r"HTTP 400 \(BadRequestError\).*too long") as info:
        client.complete(MESSAGES, purpose="t")
    assert info.value.status == 400 and server.completions == 1 and info.value.attempts == 1
    assert usage.to_dict()["calls"] == 0


def test_404_model_not_retried(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer.error(404, "The model `nope` does not exist"))
    client = make_client(server, tmp_path, model="nope")
    with pytest.raises(LLMError, match=r"HTTP 404 \(NotFoundError\)") as info:
        client.complete(MESSAGES, purpose="t")
    assert info.value.status == 404 and server.completions == 1


def test_rejected_token_field_switches_once(server: ScriptedLLMServer, tmp_path: Path) -> None:
    msg = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    server.add(Answer.error(400, msg, param="max_tokens"), Answer("ok"), Answer("again"))
    client = make_client(server, tmp_path)
    assert client.complete(MESSAGES, purpose="t").text == "ok"
    assert "max_tokens" in server.requests[0] and server.requests[1]["max_completion_tokens"] == 8192
    assert "max_tokens" not in server.requests[1] and server.completions == 2
    client.complete([{"role": "user", "content": "next"}], purpose="t")  # the switch is remembered
    assert server.requests[2]["max_completion_tokens"] == 8192 and server.completions == 3


def test_too_large_token_value_is_not_a_field_switch(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer.error(400, "'max_tokens' is too large: 8192. The model supports 4096.", param="max_tokens"))
    client = make_client(server, tmp_path)
    with pytest.raises(LLMError, match=r"HTTP 400 .*too large: 8192") as info:
        client.complete(MESSAGES, purpose="t")
    assert server.completions == 1 and info.value.attempts == 1


def test_timeout_after_retries(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(Answer.slow(2.0), Answer.slow(2.0), Answer("unused"))
    client = make_client(server, tmp_path, timeout_s=0.2, retries=1)
    with pytest.raises(LLMError, match=r"failed after 2 attempts: timed out after 0.2 s") as info:
        client.complete(MESSAGES, purpose="t")
    assert server.completions == 2 and info.value.status is None and info.value.attempts == 2


def test_unreachable_endpoint(tmp_path: Path) -> None:
    with ScriptedLLMServer([]) as s:
        base_url = s.base_url
    settings = LLMSettings(model="m", base_url=base_url, api_key_env=KEY_ENV, retries=2)
    client = LLMClient(settings, tmp_path, Usage())
    with pytest.raises(LLMError, match=r"failed after 3 attempts: endpoint http://127\.0\.0\.1:\d+/v1 unreachable"):
        client.complete(MESSAGES, purpose="t")


def test_token_budget(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(*[Answer(f"a{k}", prompt_tokens=100, completion_tokens=20) for k in range(3)])
    usage = Usage()
    client = make_client(server, tmp_path, usage, max_tokens_per_run=150)
    client.complete([{"role": "user", "content": "one"}], purpose="t")
    client.complete([{"role": "user", "content": "two"}], purpose="t")  # 120 < 150: allowed
    with pytest.raises(BudgetExceeded, match=r"240 tokens used, max_tokens_per_run=150"):
        client.complete([{"role": "user", "content": "three"}], purpose="t")
    assert server.completions == 2 and usage.to_dict()["total_tokens"] == 240
    # a cached reply is free, so it is still served past the budget
    assert client.complete([{"role": "user", "content": "one"}], purpose="t").text == "a0"


def test_cost_budget(server: ScriptedLLMServer, tmp_path: Path) -> None:
    server.add(*[Answer("x", prompt_tokens=1000, completion_tokens=500) for _ in range(3)])
    usage = Usage()
    prices = {"price_in_per_mtok": 2.0, "price_out_per_mtok": 10.0}
    client = make_client(server, tmp_path, usage, max_cost_usd=0.01, **prices)
    assert client.complete([{"role": "user", "content": "1"}], purpose="t").cost_usd == pytest.approx(0.007)
    client.complete([{"role": "user", "content": "2"}], purpose="t")
    with pytest.raises(BudgetExceeded, match=r"\$0\.0140 spent, max_cost_usd=0\.01"):
        client.complete([{"role": "user", "content": "3"}], purpose="t")
    assert server.completions == 2 and usage.cost_usd == pytest.approx(0.014)


def test_key_only_in_authorization_header(server: ScriptedLLMServer, tmp_path: Path, api_key: str) -> None:
    server.add(Answer("fine"), Answer.error(401, f"Incorrect API key provided: {api_key}"))
    client = make_client(server, tmp_path)
    client.complete(MESSAGES, purpose="t")
    with pytest.raises(LLMError) as info:
        client.complete([{"role": "user", "content": "again"}], purpose="t")
    assert server.authorizations == [f"Bearer {api_key}"] * 2
    assert all(api_key.encode() not in raw for raw in server.raw_requests)
    assert (
        info.value.status == 401
        and "HTTP 401" in str(info.value)
        and "Incorrect API key provided: ***" in str(info.value)
    )
    assert api_key not in str(info.value) and api_key not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    cache_files = list(tmp_path.rglob("*"))
    assert len(cache_files) == 1 and all(api_key not in p.read_text() for p in cache_files)
    assert api_key not in repr(client) and KEY_ENV in repr(client) and api_key not in repr(client.settings)
    assert api_key not in json.dumps(vars(client), default=repr)


def test_missing_key_variable(server: ScriptedLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    server.add(Answer("unused"))
    client = make_client(server, tmp_path)
    with pytest.raises(LLMError, match=f"environment variable {KEY_ENV} .*not set"):
        client.complete(MESSAGES, purpose="t")
    assert server.completions == 0
    monkeypatch.setenv(KEY_ENV, "none")  # a local server needing no key: any non-empty string
    assert client.complete(MESSAGES, purpose="t").text == "unused"
    assert server.authorizations == ["Bearer none"]


def test_settings_validation() -> None:
    with pytest.raises(ValueError, match="provider 'anthropic'"):
        LLMSettings(model="m", provider="anthropic")
    with pytest.raises(ValueError, match="retries"):
        LLMSettings(model="m", retries=-1)
    assert LLMSettings(model="m").cost(2_000_000, 1_000_000) == 0.0
    assert LLMSettings(model="m", price_in_per_mtok=0.5, price_out_per_mtok=2.0).cost(2_000_000, 1_000_000) == 3.0


def test_models_endpoint_with_sdk(server: ScriptedLLMServer, api_key: str) -> None:
    with openai.OpenAI(base_url=server.base_url, api_key=api_key, max_retries=0) as sdk:
        assert [m.id for m in sdk.models.list()] == ["test-model"]


def test_extract_code() -> None:
    text = (
        "Here is the plan.\n```text\nnot code\n```\n"
        "```cpp\nint main() { return 0; }\n```\n"
        "```Python\nimport triton\n\ndef f():\n    return 1\n```\n"
        "```python\nsecond = True\n```\n"
    )
    assert extract_code(text, "python") == "import triton\n\ndef f():\n    return 1\n"
    assert extract_code(text, "cpp") == "int main() { return 0; }\n"
    assert extract_code(text, "fortran") is None
    assert extract_code("no fences at all", "python") is None
    assert extract_code("Sure:\n```\nx = 2\n```\n```python\ny = 3\n```", "python") == "x = 2\n"
    assert extract_code("cut short:\n```python\nx = 1\n", "python") is None
    assert extract_code("````python\na = '```'\n````", "python") == "a = '```'\n"
