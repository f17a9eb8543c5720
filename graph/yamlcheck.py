"""Checking parsed YAML against a schema, with the line of every problem.

``index_lines`` maps each key path of a composed YAML node tree to the line of
its key; :class:`Checker` collects :class:`Issue` s (``file:line: key.path:
message``) so that every problem in a file is reported at once in one
:class:`ConfigError`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

KeyPath = tuple[str | int, ...]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # dotted, for torch parameters


def format_key(path: KeyPath) -> str:
    """``("workflows", "blas1", "targets", 1)`` -> ``workflows.blas1.targets[1]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


@dataclass(frozen=True)
class Issue:
    """One problem in a configuration file."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ConfigError(Exception):
    """Every problem found in a configuration file, one per line of the message."""

    def __init__(self, issues: Sequence[Issue]) -> None:
        self.issues = tuple(issues)
        super().__init__("\n".join(str(i) for i in self.issues))



def index_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], dups: list[tuple[KeyPath, int]],
           merged: bool = False) -> None:
    """Map each key path to the 1-based line of its key (mapping) or item (sequence)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        merges = []
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                continue
            if k.tag == "tag:yaml.org,2002:merge" or k.value == "<<":
                merges.append(v)
                continue
            sub = (*path, k.value)
            if k.value in seen and not merged:
                dups.append((sub, k.start_mark.line + 1))
            seen.add(k.value)
            lines.setdefault(sub, k.start_mark.line + 1)
            index_lines(v, sub, lines, dups, merged)
        for v in merges:  # keys merged from an anchor point at the anchor's lines
            for m in v.value if isinstance(v, yaml.SequenceNode) else [v]:
                index_lines(m, path, lines, dups, True)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.setdefault((*path, i), item.start_mark.line + 1)
            index_lines(item, (*path, i), lines, dups, merged)


def did_you_mean(word: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def describe(value: object) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ('{value}')"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__



class Checker:
    """Collects issues while checking parsed YAML against the schema."""

    def __init__(self, shown: str, lines: dict[KeyPath, int]) -> None:
        self.shown = shown
        self.lines = lines
        self.issues: list[Issue] = []

    def line(self, path: KeyPath) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def error(self, path: KeyPath, message: str) -> None:
        self.issues.append(Issue(self.shown, self.line(path), format_key(path), message))

    def mapping(self, value: object, path: KeyPath, allowed: Sequence[str] | None,
                required: Sequence[str] = (), extra: Callable[[str], bool] | None = None) -> dict[str, Any]:
        """A mapping with string keys; unknown keys (when ``allowed`` is given) and missing
        required keys are reported. Null counts as an empty mapping."""
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {describe(value)}")
            return {}
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                self.error((*path, str(k)), f"key must be a string, got {describe(k)}")
                continue
            if allowed is not None and k not in allowed and not (extra and extra(k)):
                hint = did_you_mean(k, allowed)
                self.error((*path, k), f"unknown key{hint or '; expected one of: ' + ', '.join(allowed)}")
                continue
            out[k] = v
        for k in required:
            if k not in out and k in (allowed or ()):
                self.error(path, f"missing required key '{k}'")
        return out

    def string(self, value: object, path: KeyPath) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.error(path, f"expected a non-empty string, got {describe(value)}")
            return None
        return value

    def string_list(self, value: object, path: KeyPath, what: str) -> list[str]:
        if not isinstance(value, list) or not value:
            self.error(path, f"expected a non-empty list of {what}, got {describe(value)}")
            return []
        out = []
        for i, item in enumerate(value):
            s = self.string(item, (*path, i))
            if s is not None:
                out.append(s)
        return out

    def integer(self, value: object, path: KeyPath, minimum: int | None = None) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            hint = ""
            if isinstance(value, (str, float)):
                hint = " (write integers out in full, e.g. 1000000 rather than 1e6)"
            self.error(path, f"expected an integer, got {describe(value)}{hint}")
            return None
        if minimum is not None and value < minimum:
            self.error(path, f"must be >= {minimum}, got {value}")
            return None
        return value

    def non_negative_number(self, value: object, path: KeyPath) -> float | None:
        """A finite number >= 0; strings such as '1e-6' (which YAML 1.1 reads as text) are accepted."""
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                number = None
        if number is None or not math.isfinite(number) or number < 0:
            self.error(path, f"expected a finite number >= 0, got {describe(value)}")
            return None
        return number

    def names(self, value: object, path: KeyPath, norm: Callable[[str], str],
              pattern: re.Pattern[str] = NAME) -> dict[str, Any]:
        """A mapping keyed by names, normalized; duplicates after normalizing are errors.
        Returns ``{normalized: (name as written, value)}``."""
        raw = self.mapping(value, path, None)
        out: dict[str, Any] = {}
        for k, v in raw.items():
            if not pattern.fullmatch(k):
                self.error((*path, k), "not a valid name")
                continue
            key = norm(k)
            if key in out:
                self.error((*path, k), f"'{k}' and '{out[key][0]}' name the same thing (case-insensitive here)")
                continue
            out[key] = (k, v)
        return out


def check_model(c: Checker, path: KeyPath, value: object, model: type[BaseModel]) -> BaseModel | None:
    """``value`` read into ``model`` (a pydantic model), every problem reported through ``c``
    at its key's line; unknown keys get a "did you mean"."""
    try:
        return model.model_validate({} if value is None else value)
    except ValidationError as err:
        for e in err.errors():
            loc = tuple(e["loc"])
            where = (*path, *loc)
            if e["type"] == "extra_forbidden":
                known = _fields_at(model, loc[:-1])
                hint = did_you_mean(str(loc[-1]), known) or "; expected one of: " + ", ".join(known)
                c.error(where, f"unknown key{hint}")
            elif e["type"] == "missing":
                c.error(where[:-1], f"missing required key '{loc[-1]}'")
            else:
                message = str(e["msg"]).removeprefix("Value error, ")
                message = re.sub(r"^Input should be (greater|less)", r"must be \1", message)
                message = re.sub(r"^Input should be ", "expected ", message)
                shown = describe(e["input"]) if e["type"] not in ("value_error", "assertion_error") else ""
                c.error(where, f"{message}, got {shown}" if shown and not isinstance(e["input"], dict) else message)
        return None


def _fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model`` (list items skipped)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if isinstance(current, type) and issubclass(current, BaseModel) \
            else None
        if field is None:
            return []
        current = _model_in(field.annotation)
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def _model_in(annotation: Any) -> Any:
    """The pydantic model an annotation holds (``tuple[X, ...]``, ``X | None``: X)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
