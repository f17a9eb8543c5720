"""The ``agent:`` section of a workflow: the optional OpenAI-compatible LLM agent.

```yaml
agent:
  provider: openai              # none (the default) | openai: any OpenAI-compatible endpoint
  model: gpt-4.1
  base_url: http://localhost:8000/v1   # omit for api.openai.com
  api_key_env: OPENAI_API_KEY   # the NAME of the variable holding the key (never the key)
  timeout_s: 120                # per request
  retries: 3                    # the OpenAI SDK's own: timeouts, connection errors, 408, 409, 429, 5xx
  max_tokens: 2000000           # per run (prompt + completion); omit for no limit
  max_cost_usd: 5.0             # per run; needs the prices below to mean anything
  price_in_per_mtok: 2.0        # USD per million prompt tokens
  price_out_per_mtok: 8.0       # USD per million completion tokens
  attempts: {coder: 3, fixer: 3, optimizer: 2}   # LLM calls per region and target, per role
```
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from graph.yamlcheck import Checker, KeyPath, describe, did_you_mean

PROVIDERS = ("none", "openai")
AGENT_KEYS = ("provider", "model", "base_url", "api_key_env", "timeout_s", "retries", "max_tokens",
              "max_cost_usd", "price_in_per_mtok", "price_out_per_mtok", "attempts")
ROLES = ("coder", "fixer", "optimizer")
DEFAULT_ATTEMPTS = {"coder": 3, "fixer": 3, "optimizer": 2}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class AgentConfig:
    provider: str = "none"  # "none" | "openai" (any OpenAI-compatible endpoint)
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0
    retries: int = 3
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    attempts: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_ATTEMPTS))

    @property
    def enabled(self) -> bool:
        return self.provider != "none"

    def cap(self, role: str) -> int:
        return self.attempts.get(role, DEFAULT_ATTEMPTS[role])


def parse_agent(c: Checker, p: KeyPath, value: object) -> AgentConfig:
    """The ``agent:`` mapping of a workflow, every problem reported through ``c``."""
    a = c.mapping(value, p, AGENT_KEYS)
    provider = "none"
    if "provider" in a:
        prov = a["provider"]
        if prov is False or prov is None:  # `provider: no` / `provider:`
            prov = "none"
        if prov not in PROVIDERS:
            c.error((*p, "provider"), f"unknown provider {describe(prov)}{did_you_mean(str(prov), PROVIDERS)}; "
                    f"expected one of: {', '.join(PROVIDERS)}")
        else:
            provider = prov
    model = c.string(a["model"], (*p, "model")) if "model" in a else None
    base_url = c.string(a["base_url"], (*p, "base_url")) if "base_url" in a else None
    if base_url is not None and not re.match(r"https?://", base_url):
        c.error((*p, "base_url"), f"expected an http:// or https:// URL, got '{base_url}'")
    api_key_env = "OPENAI_API_KEY"
    if "api_key_env" in a:
        env = c.string(a["api_key_env"], (*p, "api_key_env"))
        if env is not None and not _IDENT.fullmatch(env):
            c.error((*p, "api_key_env"), f"'{env}' is not an environment variable name (give its name, not the key)")
        elif env is not None:
            api_key_env = env
    if provider == "openai" and model is None and "model" not in a:
        c.error(p, "missing required key 'model' (needed when provider is openai)")

    def number(key: str, default: float | None) -> float | None:
        return c.non_negative_number(a[key], (*p, key)) if key in a else default

    def integer(key: str, default: int | None, minimum: int) -> int | None:
        return c.integer(a[key], (*p, key), minimum=minimum) if key in a else default

    attempts = dict(DEFAULT_ATTEMPTS)
    for role, n in c.mapping(a.get("attempts"), (*p, "attempts"), ROLES).items():
        got = c.integer(n, (*p, "attempts", role), minimum=0)
        if got is not None:
            attempts[role] = got
    return AgentConfig(provider, model, base_url, api_key_env, timeout_s=number("timeout_s", 120.0) or 120.0,
                       retries=integer("retries", 3, 0) or 0, max_tokens=integer("max_tokens", None, 1),
                       max_cost_usd=number("max_cost_usd", None),
                       price_in_per_mtok=number("price_in_per_mtok", 0.0) or 0.0,
                       price_out_per_mtok=number("price_out_per_mtok", 0.0) or 0.0, attempts=attempts)
