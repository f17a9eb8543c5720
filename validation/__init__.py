"""Validation: build and run the reference and the candidates in subprocesses,
compare their outputs, record golden data. ``validate_region`` (in
:mod:`validation.region`) is the whole protocol for one region."""

from __future__ import annotations

from typing import Any

__all__ = ["validate_region", "RegionValidation", "TargetValidation", "ValidationError"]


def __getattr__(name: str) -> Any:  # lazy, so that `python -m validation.worker` stays light
    if name in ("validate_region", "RegionValidation", "TargetValidation"):
        from validation import region

        return getattr(region, name)
    if name == "ValidationError":
        from validation.signature import ValidationError

        return ValidationError
    raise AttributeError(name)
