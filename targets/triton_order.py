"""Which serial device segment a Triton launcher may launch after the parallel nest that follows it.

A serial segment is one program; launched first, its launch (and the host statements after it) keep
the GPU idle before the nest starts. ivamax's ``DMAX = DABS(DX(1))`` is the start value of the scan
after it, which the launcher reads only once the nest's pairs are joined: launched after the pair
kernel, the whole launcher ran faster, the host's time for each Triton launch no longer keeping
the GPU idle (``benchmarks/probes/launch_steps.py``). Its results stay on the device until read
(``targets.triton_pending``), so only the launch line moves; its output tensors are allocated where
it stood."""

from __future__ import annotations

from translate import ir
from translate.irquery import arrays_written, scalar_reads, scalar_writes
from translate.partition import DeviceNest, DeviceSerial, HostBlock, Segment


def _copy_of(s: ir.Stmt, names: set[str]) -> str | None:
    """The target of ``s`` where ``s`` is a plain copy of one of ``names`` (a pending tensor's alias)."""
    if (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and isinstance(s.value, ir.Var)
            and s.value.name in names and s.value.dtype == s.target.dtype):
        return s.target.name
    return None


def _arrays_read(stmts: tuple[ir.Stmt, ...] | ir.Stmt) -> set[str]:
    return {n.array for s in (stmts if isinstance(stmts, tuple) else (stmts,)) for n in ir.walk(s)
            if isinstance(n, ir.Load)}


def nest_after(segments: tuple[Segment, ...], k: int, outs: set[str]) -> DeviceNest | None:
    """The nest the serial segment ``segments[k]`` (results ``outs``) may be launched after: the
    next segment past host blocks that neither read nor write its results (a plain copy of one is
    a copy of its tensor), write none of its scalar arguments, read no array and do not return,
    where the nest reads none of its results and the two share no array one of them writes. None
    where there is no such nest."""
    serial = segments[k]
    assert isinstance(serial, DeviceSerial)
    names = set(outs)
    j = k + 1
    while j < len(segments) and isinstance(segments[j], HostBlock):
        for s in segments[j].stmts:  # type: ignore[union-attr]
            if any(isinstance(n, (ir.Return, ir.ErrorCall, ir.HostCall)) for n in ir.walk(s)):
                return None
            if scalar_writes(s) & set(serial.scalars_in) or _arrays_read(s):
                return None  # the launch, moved, would pass the new value
            target = _copy_of(s, names)
            if target is not None:
                names.add(target)
            elif (scalar_reads(s) | scalar_writes(s)) & names:
                return None
        j += 1
    if j == len(segments) or not isinstance(segments[j], DeviceNest):
        return None
    nest = segments[j]
    if set(nest.scalars_in) & names or arrays_written(serial.stmts):
        return None
    if arrays_written(nest.body) & _arrays_read(serial.stmts):
        return None
    return nest
