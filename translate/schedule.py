"""Schedules (how much of the analysed parallelism a translation uses) and the
host/device partition of a routine that every target renders from.

A routine is a host program containing device work. ``partition`` splits a
kernel's body into segments:

* ``HostBlock``: scalar-only statements (argument checks, quick returns, error
  calls, scalar arithmetic); they touch no array and run on the host side.
* ``HostIf`` / ``HostLoop``: host control flow around device work.
* ``DeviceNest``: a parallel loop nest (up to three collapsed loops) with its
  innermost body and its reductions: one device kernel.
* ``DeviceSerial``: statements that touch arrays but are not parallel (a
  loop-carried recurrence, a single element update): one single-thread device
  kernel. Scalars it writes that are read later are copied back.
"""

from __future__ import annotations

from dataclasses import dataclass

from translate import ir


@dataclass(frozen=True)
class Schedule:
    """``level`` 0 uses the analysis as is; 1 keeps only the outermost parallel
    loop of each nest (no collapse); 2 runs everything serially on the device.
    The retry edge of the workflow walks these levels."""

    level: int = 0
    block: int = 256

    def describe(self) -> str:
        return ["as analysed", "outermost loop parallel only", "serial on the device"][self.level]


MAX_LEVEL = 2


@dataclass(frozen=True)
class HostBlock:
    stmts: tuple[ir.Stmt, ...]


@dataclass(frozen=True)
class HostIf:
    cond: ir.Expr
    then: tuple[Segment, ...]
    orelse: tuple[Segment, ...] = ()


@dataclass(frozen=True)
class HostLoop:
    var: str
    start: ir.Expr
    stop: ir.Expr
    step: ir.Expr
    body: tuple[Segment, ...]


@dataclass(frozen=True)
class DeviceNest:
    name: str  # kernel name, e.g. "daxpy_loop1"
    loops: tuple[ir.Loop, ...]  # collapsed parallel loops, outermost first
    body: tuple[ir.Stmt, ...]  # the innermost body
    reductions: tuple[ir.Reduction, ...]
    scalars_in: tuple[str, ...]  # host scalars the nest reads
    arrays: tuple[str, ...]  # arrays the nest touches
    private: tuple[str, ...]  # scalars local to one iteration
    line: int


@dataclass(frozen=True)
class DeviceSerial:
    name: str
    stmts: tuple[ir.Stmt, ...]
    scalars_in: tuple[str, ...]
    scalars_out: tuple[str, ...]  # scalars written here and needed afterwards
    arrays: tuple[str, ...]
    line: int


Segment = HostBlock | HostIf | HostLoop | DeviceNest | DeviceSerial
