"""The IR as JSON, for kernels made in another process (a sandboxed frontend worker).

``dumps(obj)`` writes an IR value (a Kernel, an Opaque, anything of :mod:`translate.ir`);
``loads(text)`` makes it again. Decoding builds only dataclasses and enums defined in
:mod:`translate.ir` (never an arbitrary class, unlike pickle), so the text of an untrusted
process can at worst be refused.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

from translate import ir


class IRDecodeError(ValueError):
    """The text is not an IR value this module wrote."""


def _encode(o: Any) -> Any:
    if isinstance(o, enum.Enum):
        return {"$e": type(o).__name__, "v": o.value}
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {"$": type(o).__name__, **{f.name: _encode(getattr(o, f.name)) for f in dataclasses.fields(o)}}
    if isinstance(o, (tuple, list)):
        return [_encode(x) for x in o]
    if o is None or isinstance(o, (str, int, float, bool)):
        return o
    raise TypeError(f"not an IR value: {type(o).__name__}")


def _decode(d: Any) -> Any:
    if isinstance(d, list):
        return tuple(_decode(x) for x in d)
    if isinstance(d, dict):
        if "$e" in d:
            cls = getattr(ir, str(d["$e"]), None)
            if not (isinstance(cls, type) and issubclass(cls, enum.Enum) and cls.__module__ == ir.__name__):
                raise IRDecodeError(f"unknown enum {d['$e']!r}")
            return cls(d["v"])
        name = d.get("$")
        cls = getattr(ir, str(name), None)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == ir.__name__):
            raise IRDecodeError(f"unknown IR class {name!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        fields = {k: _decode(v) for k, v in d.items() if k != "$"}
        if not set(fields) <= names:
            raise IRDecodeError(f"{name} has no field {sorted(set(fields) - names)[0]!r}")
        try:
            return cls(**fields)
        except TypeError as exc:
            raise IRDecodeError(f"{name}: {exc}") from None
    if d is None or isinstance(d, (str, int, float, bool)):
        return d
    raise IRDecodeError(f"unexpected {type(d).__name__}")


def dumps(obj: Any) -> str:
    return json.dumps(_encode(obj))


def loads(text: str) -> Any:
    try:
        return _decode(json.loads(text))
    except (ValueError, RecursionError) as exc:
        raise IRDecodeError(str(exc)) from None
