"""Secrets stay with the client: which variables are secret, the environment a child process
may inherit, and the redactor every text passes before it goes to a model or into a report.

A secret is a variable whose name holds one of ``SECRET_WORDS`` (``OPENAI_API_KEY``,
``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ...) or a name the caller gives (the agent's
``api_key_env``, whatever it is called). :func:`child_environment` is what the tool's own
children (compilers, builds, the reference) start from: the tool's environment without any
secret. A candidate sees less still: the sandbox builds its environment from an allow-list
(``validation.sandbox``). :func:`redact` removes from a text the values of the secrets in the
environment and anything shaped like a key or a credential assignment, whatever printed it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE")
MASK = "***"
# a secret's value shorter than this is not searched for in texts ("none", "1": a local server's
# placeholder key would otherwise mask words); the key shapes below still apply
MIN_VALUE_CHARS = 8

_WORDS = "|".join(SECRET_WORDS)
# key shapes of the common providers, then NAME=value / "NAME": "value" with a secret's name
_SHAPES = tuple(re.compile(p) for p in (
    r"\bsk-[A-Za-z0-9_\-]{12,}",                  # OpenAI, Anthropic (sk-ant-...), DeepSeek, ...
    r"\bgh[pousr]_[A-Za-z0-9]{20,}", r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}", r"\bhf_[A-Za-z0-9]{20,}", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    r"\bAKIA[0-9A-Z]{16}\b", r"\bAIza[0-9A-Za-z_\-]{35}",
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{12,}=*",
))
# an environment dump's NAME=value (or JSON's "NAME": "value") with an upper-case secret name and a
# value of eight characters or more: what printing os.environ or /proc/PID/environ shows
_ASSIGNED = re.compile(rf"\b([A-Z0-9_]*(?:{_WORDS})[A-Z0-9_]*)(=|\"\s*:\s*\")([^\s\x00\"',;]{{8,}})")


def is_secret(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether the variable ``name`` is a secret: its name holds a secret word, or it is in ``extra``."""
    return name in set(extra) or any(w in name.upper() for w in SECRET_WORDS)


def child_environment(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> dict[str, str]:
    """``env`` (default: ours) without its secrets: what a compiler, a build or the reference starts from."""
    names = set(extra)
    return {k: v for k, v in (os.environ if env is None else env).items() if not is_secret(k, names)}


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The values of the secrets in ``env`` (default: ours) long enough to be searched for, longest first."""
    names = set(extra)
    found = {v for k, v in (os.environ if env is None else env).items()
             if is_secret(k, names) and len(v) >= MIN_VALUE_CHARS}
    return sorted(found, key=len, reverse=True)


def redact(text: str, values: Iterable[str] = (), extra: Iterable[str] = ()) -> str:
    """``text`` with every secret removed: ``values``, the values of our secrets (``extra``: more
    secret names), key-shaped strings and the values of ``NAME=value`` where NAME is a secret's."""
    if not text:
        return text
    for v in sorted({*values, *secret_values(extra=extra)}, key=len, reverse=True):
        if v and len(v) >= MIN_VALUE_CHARS:
            text = text.replace(v, MASK)
    for shape in _SHAPES:
        text = shape.sub(MASK, text)
    return _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + MASK, text)


def redact_tree(value: object, values: Iterable[str] = (), extra: Iterable[str] = ()) -> object:
    """:func:`redact` applied to every string in a JSON-like ``value`` (dicts, lists, strings)."""
    vals = [*values, *secret_values(extra=extra)]
    if isinstance(value, str):
        return redact(value, vals)
    if isinstance(value, dict):
        return {k: redact_tree(v, vals) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v, vals) for v in value]
    return value
