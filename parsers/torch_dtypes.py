"""dtype mapping between torch and the IR."""

from __future__ import annotations

import torch

from parsers.base import Unsupported
from translate.ir import DType

_MAP = {
    torch.float32: DType.F32, torch.float64: DType.F64, torch.float16: DType.F16, torch.bfloat16: DType.BF16,
    torch.int32: DType.I32, torch.int64: DType.I64, torch.bool: DType.BOOL,
    torch.int8: DType.I32, torch.int16: DType.I32, torch.uint8: DType.I32,
}


def ir_dtype(dt: torch.dtype) -> DType:
    if dt not in _MAP:
        raise Unsupported(f"tensor dtype {dt} is not supported")
    return _MAP[dt]


def compute_dtype(dt: DType) -> DType:
    """Half types compute in f32."""
    return DType.F32 if dt in (DType.F16, DType.BF16) else dt
