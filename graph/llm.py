"""OpenAI-compatible chat client for the optional agents: cache, token/cost budget, retries.

Every agent call goes through :class:`LLMClient.complete`. A reply is cached on disk under a key
derived from everything that determines it (model, endpoint, sampling settings, messages), so a
re-run or a resumed run replays it without a request and without cost. A per-run :class:`Usage`
(passed in, never module state) accumulates tokens and cost; the client refuses a new request once
a limit of :class:`LLMSettings` is reached.

The API key is read from the environment variable *named* by ``LLMSettings.api_key_env`` at each
request and is never stored on the client, written to the cache, logged or put in an exception
message. Local servers (vLLM, llama.cpp, Ollama) that need no key still need that variable to be
set to some non-empty string (``export LOCAL_LLM_KEY=none`` with ``api_key_env: LOCAL_LLM_KEY``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import openai

from validation.secrets import redact, secret_values

log = logging.getLogger(__name__)

TokenParam = Literal["auto", "max_completion_tokens", "max_tokens"]
_CACHE_VERSION = 1
_RETRYABLE = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)


class BudgetExceeded(RuntimeError):
    """A run-wide limit (tokens or cost) was reached before a request; the message names the limit."""


class LLMError(RuntimeError):
    """A request failed: endpoint unreachable, HTTP error status, timeout after retries, bad reply.

    ``status`` is the HTTP status when the server answered, else None. The message never holds the key.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True)
class LLMSettings:
    """Endpoint, model, limits and prices for one workflow's agent.

    ``api_key_env`` is the NAME of the environment variable holding the key, never the key.
    ``max_tokens_per_run`` / ``max_cost_usd``: None means unlimited. Prices are USD per million
    prompt / completion tokens; 0 means unknown and the cost is then reported as 0.
    ``token_param`` picks the request field for the completion limit: ``max_completion_tokens``
    (OpenAI's current name, required by its reasoning models) or ``max_tokens`` (the name every
    OpenAI-compatible server honours; older llama.cpp and llama-cpp-python silently ignore the new
    name). ``auto`` uses the new name for api.openai.com and the old one for any other ``base_url``;
    either way a 400 that names the field sent switches to the other field once.
    """

    model: str
    provider: str = "openai"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    retries: int = 3
    max_tokens_per_run: int | None = None
    max_cost_usd: float | None = None
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    temperature: float = 0.0
    max_completion_tokens: int = 8192
    token_param: TokenParam = "auto"

    def __post_init__(self) -> None:
        if self.provider != "openai":
            raise ValueError(f"LLM provider {self.provider!r} is not supported (only 'openai'-compatible endpoints)")
        if not self.model:
            raise ValueError("LLM model name is empty")
        if self.timeout_s <= 0 or self.retries < 0 or self.max_completion_tokens <= 0:
            raise ValueError("timeout_s and max_completion_tokens must be > 0 and retries >= 0")
        if self.token_param not in ("auto", "max_completion_tokens", "max_tokens"):
            raise ValueError(f"token_param {self.token_param!r} is not auto, max_completion_tokens or max_tokens")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD cost of a request with these token counts at the configured prices."""
        return (prompt_tokens * self.price_in_per_mtok + completion_tokens * self.price_out_per_mtok) / 1e6


@dataclass(frozen=True)
class Reply:
    """One completion. A cached reply keeps the original token counts but costs 0 and adds no usage."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool
    model: str


@dataclass
class Usage:
    """Tokens, cost and calls of one run; shared by every client of the run (thread-safe)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    cached_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens of the requests actually sent."""
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        """Account one request that went to the endpoint."""
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.cost_usd += cost_usd
            self.calls += 1

    def add_cached(self) -> None:
        """Account one reply served from the cache (free)."""
        with self._lock:
            self.cached_calls += 1

    def to_dict(self) -> dict[str, int | float]:
        """Plain numbers for the report."""
        with self._lock:
            return {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "cost_usd": self.cost_usd,
                "calls": self.calls,
                "cached_calls": self.cached_calls,
            }


class LLMClient:
    """Chat completions against one OpenAI-compatible endpoint, with cache, budget and retries.

    Concurrent use from several threads is safe; the budget is checked before each request, so
    requests already in flight when a limit is reached can overshoot it by their own usage.
    """

    def __init__(self, settings: LLMSettings, cache_dir: Path, usage: Usage) -> None:
        self.settings = settings
        self.cache_dir = Path(cache_dir)
        self.usage = usage
        self._token_param = _initial_token_param(settings)

    def __repr__(self) -> str:
        s = self.settings
        return f"LLMClient(model={s.model!r}, base_url={s.base_url!r}, api_key_env={s.api_key_env!r})"

    def cache_key(self, messages: list[dict[str, str]]) -> str:
        """sha256 of the canonical JSON of everything that determines the reply."""
        s = self.settings
        material = {
            "v": _CACHE_VERSION,
            "model": s.model,
            "base_url": s.base_url.rstrip("/") if s.base_url else None,
            "temperature": s.temperature,
            "max_completion_tokens": s.max_completion_tokens,
            "messages": messages,
        }
        canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def complete(self, messages: list[dict[str, str]], *, purpose: str) -> Reply:
        """The assistant's reply to ``messages``; ``purpose`` labels the call in logs and the cache file.

        Raises BudgetExceeded when a limit was already reached (cache hits are still served), and
        LLMError when the key variable is unset or the request fails after the allowed retries.
        """
        _check_messages(messages)
        # whatever a candidate printed (a failure log goes to the fixer) leaves without a secret
        values = secret_values(extra=[self.settings.api_key_env])
        messages = [{**m, "content": redact(m["content"], values)} for m in messages]
        key = self.cache_key(messages)
        hit = self._read_cache(key)
        if hit is not None:
            self.usage.add_cached()
            log.info("llm %s: cache hit %s", purpose, key[:12])
            return hit
        self._check_budget()
        reply = self._request(messages, self._api_key(), purpose)
        self.usage.add(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)
        self._write_cache(key, reply, purpose)
        return reply

    # -- budget and key -------------------------------------------------------------------------

    def _check_budget(self) -> None:
        s, u = self.settings, self.usage
        if s.max_tokens_per_run is not None and u.total_tokens >= s.max_tokens_per_run:
            raise BudgetExceeded(
                f"LLM token budget reached: {u.total_tokens} tokens used, max_tokens_per_run={s.max_tokens_per_run}"
            )
        if s.max_cost_usd is not None and u.cost_usd >= s.max_cost_usd:
            raise BudgetExceeded(f"LLM cost budget reached: ${u.cost_usd:.4f} spent, max_cost_usd={s.max_cost_usd}")

    def _api_key(self) -> str:
        name = self.settings.api_key_env
        value = os.environ.get(name)
        if not value:
            raise LLMError(
                f"environment variable {name} (api_key_env) is not set or empty; set it to the API key "
                "(any non-empty string for a local server that needs no key)"
            )
        return value

    # -- the request ----------------------------------------------------------------------------

    def _request(self, messages: list[dict[str, str]], api_key: str, purpose: str) -> Reply:
        """One chat completion. The SDK retries timeouts, connection errors, 408, 409, 429 and 5xx
        itself (``settings.retries`` times, exponential backoff from 0.5 s, a server's Retry-After
        honoured); a request that names the other token-limit field is sent once more with it."""
        s = self.settings
        where = s.base_url or "api.openai.com"
        sent: list[Any] = []  # every HTTP request the SDK sends, its retries included
        switched = 0  # requests spent on a rejected token-limit field (not attempts at this call)
        with (
            openai.DefaultHttpxClient(event_hooks={"request": [sent.append]}) as http,
            openai.OpenAI(base_url=s.base_url, api_key=api_key, timeout=s.timeout_s, max_retries=s.retries,
                          http_client=http) as client,
        ):
            while True:
                # the field name is chosen at run time (and the keyword max_completion_tokens is SDK >= 1.45 only)
                limit = {self._token_param: s.max_completion_tokens}
                try:
                    response = client.chat.completions.create(  # type: ignore[call-overload]
                        model=s.model, messages=messages, temperature=s.temperature, extra_body=limit
                    )
                except openai.OpenAIError as exc:
                    if (
                        not switched
                        and isinstance(exc, openai.BadRequestError)
                        and _names_param(exc, self._token_param)
                    ):
                        old, self._token_param = self._token_param, _other_param(self._token_param)
                        log.warning("llm %s: endpoint rejected %s, retrying with %s", purpose, old, self._token_param)
                        switched = len(sent)
                        continue
                    what = _describe(exc, where, s.timeout_s, api_key)
                    status = getattr(exc, "status_code", None)
                    attempts = len(sent) - switched
                    failed = f"failed after {attempts} attempts" if isinstance(exc, _RETRYABLE) else "failed"
                    raise LLMError(f"LLM request ({purpose}) {failed}: {what}", status=status,
                                   attempts=attempts) from None
                if len(sent) - switched > 1:
                    log.warning("llm %s: answered after %d attempts", purpose, len(sent) - switched)
                return self._reply(response, purpose)

    def _reply(self, response: Any, purpose: str) -> Reply:
        s = self.settings
        if not response.choices:
            raise LLMError(f"LLM reply ({purpose}) from {s.base_url or 'api.openai.com'} has no choices")
        choice = response.choices[0]
        text = choice.message.content
        if text is None:
            raise LLMError(f"LLM reply ({purpose}) has no text content (finish_reason={choice.finish_reason})")
        if choice.finish_reason == "length":
            log.warning("llm %s: reply cut at max_completion_tokens=%d", purpose, s.max_completion_tokens)
        if response.usage is None:
            log.warning("llm %s: endpoint reported no token usage; counted as 0", purpose)
        n_in = int(getattr(response.usage, "prompt_tokens", 0) or 0)
        n_out = int(getattr(response.usage, "completion_tokens", 0) or 0)
        return Reply(text, n_in, n_out, s.cost(n_in, n_out), cached=False, model=response.model or s.model)

    # -- cache ----------------------------------------------------------------------------------

    def _read_cache(self, key: str) -> Reply | None:
        path = self.cache_dir / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Reply(
                text=str(data["text"]),
                prompt_tokens=int(data["prompt_tokens"]),
                completion_tokens=int(data["completion_tokens"]),
                cost_usd=0.0,
                cached=True,
                model=str(data.get("model") or self.settings.model),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("llm cache file %s unreadable (%s); ignoring it", path, exc)
            return None

    def _write_cache(self, key: str, reply: Reply, purpose: str) -> None:
        data = {"model": reply.model, "purpose": purpose, "text": reply.text}
        data |= {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=f".{key[:12]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, ensure_ascii=False)
            os.replace(tmp, self.cache_dir / f"{key}.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def extract_code(text: str, language: str) -> str | None:
    """Body of the first fenced code block tagged ``language`` (case-insensitive) or untagged.

    Blocks tagged with another language are skipped; None when there is no such block. An
    unterminated final block (a reply cut short) counts as no block.
    """
    want = language.strip().lower()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            info = stripped[len(fence) :].strip().split()
            tag = info[0].lower() if info else ""
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
            if end is None:
                return None
            if tag in ("", want):
                return "\n".join(lines[i + 1 : end]) + "\n"
            i = end
        i += 1
    return None


# -- helpers --------------------------------------------------------------------------------------


def _check_messages(messages: list[dict[str, str]]) -> None:
    if not messages:
        raise ValueError("messages is empty")
    for k, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{k}] is not a {{'role': str, 'content': str}} dict")


def _initial_token_param(settings: LLMSettings) -> str:
    if settings.token_param != "auto":
        return settings.token_param
    host = urlparse(settings.base_url).hostname if settings.base_url else "api.openai.com"
    return "max_completion_tokens" if host == "api.openai.com" else "max_tokens"


def _other_param(param: str) -> str:
    return "max_tokens" if param == "max_completion_tokens" else "max_completion_tokens"


_UNSUPPORTED_WORDS = ("unsupported", "not supported", "unrecognized", "unknown", "not permitted", "extra input")


def _names_param(exc: openai.BadRequestError, param: str) -> bool:
    """Whether a 400 says the completion-limit field itself is not accepted (not that its value is too large)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    text = f"{exc.message} {body.get('message', '')}".lower()
    named = body.get("param") == param or any(f"{q}{param}{q}" in text for q in "'\"`")
    return named and any(word in text for word in _UNSUPPORTED_WORDS)


def _describe(exc: openai.OpenAIError, where: str, timeout_s: float, api_key: str) -> str:
    """What failed, for an exception message; the key is masked wherever a server echoed it."""
    if isinstance(exc, openai.APITimeoutError):
        text = f"timed out after {timeout_s:g} s waiting for {where}"
    elif isinstance(exc, openai.APIConnectionError):
        text = f"endpoint {where} unreachable ({type(exc.__cause__).__name__ if exc.__cause__ else 'connection error'})"
    elif isinstance(exc, openai.APIStatusError):
        detail = exc.message
        if isinstance(exc.body, dict) and isinstance(exc.body.get("message"), str):
            detail = exc.body["message"]
        text = f"HTTP {exc.status_code} ({type(exc).__name__}) from {where}: {detail[:500]}"
    else:
        text = f"{type(exc).__name__} from {where}: {str(exc)[:500]}"
    return text.replace(api_key, "***") if api_key else text
