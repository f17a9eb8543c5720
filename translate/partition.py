"""The host/device partition of a routine that every target renders from.

A routine is a host program containing device work. ``partition`` splits a
kernel's body into segments:

* ``HostBlock``: scalar-only statements (argument checks, quick returns, error
  calls, scalar arithmetic); they touch no array and run on the host side.
* ``HostIf`` / ``HostLoop`` / ``HostWhile``: host control flow around device work (a DO
  WHILE whose condition reads no array stays on the host around its nests). A serial
  loop stays on the host when the array-reading scalar work of its body can
  move into the nests it launches (``translate.sinking``: sunk assignments,
  and branches on array values such as BLAS's ``IF (X(JX).NE.ZERO)`` as
  guards inside the nest).
* ``DeviceNest``: a parallel loop nest (up to three collapsed loops) with its
  innermost body and its reductions: one device kernel.
* ``DeviceSerial``: statements that touch arrays but are not parallel (a
  loop-carried recurrence, a single element update): one single-thread device
  kernel. Scalars it writes that are read later are copied back. A linear
  recurrence (``ir.Loop.scan``, ``translate.scan``) is a ``DeviceSerial`` of its
  own, named ``<routine>_scan<k>``: a target may run it as a parallel scan.
  One whose loops nest two or more deep with trip counts known only at run time
  (a search through a whole grid) is marked ``on_host``: one device thread would
  take far longer than a host core, so the C++ targets run it on the host,
  copying its arrays there and the ones it writes back (Triton keeps it on the
  device).
* ``DeviceExtern``: an ``ir.Extern`` library operation (matmul, convolution)
  on whole arrays; a target renders it as a generated template or a library
  call, and may fuse the elementwise nest right after it into its epilogue.

Contract of the segment fields (what every renderer relies on):

* ``DeviceNest.loops``: the collapsed loops, outermost first; only the last one
  keeps its body (the others have ``body=()``). ``body`` is the innermost body,
  with any sunk scalar assignments prepended (each thread recomputes them). A
  nest launched from a host loop for a guarded ``If`` (``translate.sinking``)
  has the body ``sunk + (If(cond, assignments + innermost body),)``: each
  thread evaluates the condition, which reads no array or scalar the nest writes.
* ``scalars_in``: host scalars read (by value), including the extents that the
  linearisation of touched multi-dimensional arrays needs (``stride_scalars``)
  and those in the loop headers. Never includes loop variables of the nest,
  privates, reduction variables or ``scalars_out``.
* ``DeviceNest.private``: scalars assigned in the body (declared per iteration).
* ``DeviceNest.reductions``: each combines with the host value of the variable
  before the nest: ``s_after = s_before OP reduce(body contributions)``.
* ``DeviceSerial.scalars_out``: scalars it writes that may be read afterwards
  (or are out/inout parameters or the function result). They are copied in
  (the host value) AND copied back. Scalars it writes that are neither in
  ``scalars_in`` nor ``scalars_out`` are local to the device code.
* Names are ``<routine>_loop<k>`` and ``<routine>_serial<k>``, numbered in
  source order; ``line`` is the source line of the (first) loop, 0 if none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from translate import ir
from translate.irquery import (
    arrays_touched,
    count_refs,
    first_line,
    has_exit,
    has_parallel,
    header_arrays,
    loop_vars,
    many,
    scalar_reads,
    scalar_writes,
    stride_scalars,
)
from translate.sinking import guard_parts, guardable, sink_target


@dataclass(frozen=True)
class HostBlock:
    stmts: tuple[ir.Stmt, ...]


@dataclass(frozen=True)
class HostIf:
    cond: ir.Expr
    then: tuple[Segment, ...]
    orelse: tuple[Segment, ...] = ()


@dataclass(frozen=True)
class HostWhile:
    """A DO WHILE on the host, launching the device work of its body each iteration."""

    cond: ir.Expr
    body: tuple[Segment, ...]


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
    on_host: bool = False  # run on the host (nested loops of run-time trip counts)


@dataclass(frozen=True)
class DeviceExtern:
    name: str  # e.g. "linear_extern1"
    op: ir.Extern
    line: int


Segment = HostBlock | HostIf | HostLoop | HostWhile | DeviceNest | DeviceSerial | DeviceExtern


# --------------------------------------------------------------- segment queries


def _order(names: Iterable[str], kernel: ir.Kernel) -> tuple[str, ...]:
    """Declaration order (params, then locals), then the rest alphabetically."""
    decl = [d.name for d in kernel.params + kernel.locals]
    rank = {n: i for i, n in enumerate(decl)}
    return tuple(sorted(set(names), key=lambda n: (rank.get(n, len(rank)), n)))


def fastest_first(nest: DeviceNest, kernel: ir.Kernel) -> tuple[int, ...]:
    """Indices into ``nest.loops``, the loop that walks the contiguous
    dimension of most accesses first (the first index of LEFT arrays, the last
    of RIGHT ones); the others innermost to outermost."""
    score = [0] * len(nest.loops)
    names = [lp.var for lp in nest.loops]
    for s in nest.body:
        for n in ir.walk(s):
            target = n.target if isinstance(n, ir.Assign) and isinstance(n.target, ir.Load) else None
            load = target or (n if isinstance(n, ir.Load) else None)
            if load is None or not load.index:
                continue
            try:
                decl = kernel.param(load.array)
            except KeyError:
                continue
            layout = decl.layout if isinstance(decl, ir.Array) else ir.Layout.LEFT
            idx = load.index[0] if layout is ir.Layout.LEFT else load.index[-1]
            used = scalar_reads(idx)
            for k, v in enumerate(names):
                if v in used:
                    score[k] += 1
    inner_first = list(range(len(nest.loops) - 1, -1, -1))
    best = max(inner_first, key=lambda k: score[k])  # ties: the innermost loop
    return (best, *(k for k in inner_first if k != best))


def host_scalars(kernel: ir.Kernel, segments: Iterable[Segment]) -> tuple[str, ...]:
    """Scalar locals the host code declares: those host statements use, and
    those device segments read, write back or reduce into (not host loop
    variables, which the host loops declare)."""
    used: set[str] = set()
    host_loop_vars: set[str] = set()
    for seg in walk_segments(segments):
        if isinstance(seg, HostBlock):
            used |= many(seg.stmts, scalar_reads) | many(seg.stmts, scalar_writes)
            host_loop_vars |= many(seg.stmts, loop_vars)
        elif isinstance(seg, HostIf):
            used |= scalar_reads(seg.cond)
        elif isinstance(seg, HostLoop):
            used |= scalar_reads(seg.start) | scalar_reads(seg.stop) | scalar_reads(seg.step)
            host_loop_vars.add(seg.var)
        elif isinstance(seg, HostWhile):
            used |= scalar_reads(seg.cond)
        elif isinstance(seg, DeviceNest):
            used |= set(seg.scalars_in) | ir.reduced(seg.reductions)
        elif isinstance(seg, DeviceSerial):
            used |= set(seg.scalars_in) | set(seg.scalars_out)
    if kernel.result is not None:
        used.add(kernel.name)
    # a DO variable also assigned outside its loop (``k = bottom`` before ``DO k = ...``) is a scalar too:
    # declared here, each loop over it declares its own
    host_loop_vars -= many([st for s in walk_segments(segments) if isinstance(s, HostBlock) for st in s.stmts],
                           _assigned)
    # and one a device segment uses outside every host loop over it (NPB BT's exact_rhs sets ``i = 1``
    # in a serial segment of the j loop, after a k/i nest)
    host_loop_vars -= _used_outside_loops(segments, frozenset())
    locals_ = [d.name for d in kernel.locals if isinstance(d, ir.Scalar)]
    return tuple(n for n in locals_ if n in used and n not in host_loop_vars)


def _used_outside_loops(segments: Iterable[Segment], enclosing: frozenset[str]) -> set[str]:
    """Scalars device segments pass that no enclosing host loop runs over."""
    out: set[str] = set()
    for seg in segments:
        if isinstance(seg, HostIf):
            out |= _used_outside_loops(seg.then, enclosing) | _used_outside_loops(seg.orelse, enclosing)
        elif isinstance(seg, HostLoop):
            out |= _used_outside_loops(seg.body, enclosing | {seg.var})
        elif isinstance(seg, HostWhile):
            out |= _used_outside_loops(seg.body, enclosing)
        elif isinstance(seg, DeviceNest):
            out |= set(seg.scalars_in) - enclosing
        elif isinstance(seg, DeviceSerial):
            out |= (set(seg.scalars_in) | set(seg.scalars_out)) - enclosing
    return out


def allocation_point(kernel: ir.Kernel, segments: Sequence[Segment], arrays: Iterable[ir.Array]) -> int | None:
    """How many of the leading ``segments`` run before ``arrays`` (local arrays) can be allocated:
    0 where their extents read only parameters, else the segments up to the one that sets the last
    scalar their extents read (the entry reads of ``translate.analysis.entry_scalars``). None where
    those scalars are not all set by leading segments that leave the arrays alone."""
    params = {p.name for p in kernel.params}
    need = {v.name for a in arrays for e in a.shape for v in ir.walk(e) if isinstance(v, ir.Var)} - params
    names = {a.name for a in arrays}
    if not need:
        return 0
    for k, seg in enumerate(segments):
        if isinstance(seg, HostBlock):
            touched, set_here = many(seg.stmts, arrays_touched), many(seg.stmts, _assigned)
        elif isinstance(seg, DeviceSerial):
            touched, set_here = set(seg.arrays), set(seg.scalars_out)
        else:
            return None
        if touched & names:
            return None
        need -= set_here
        if not need:
            return k + 1
    return None


def _assigned(node: object) -> set[str]:
    """Scalars assigned by an ``Assign`` (a loop variable only when also assigned so)."""
    return {n.target.name for n in ir.walk(node) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}


def scan_segment(seg: DeviceSerial) -> ir.Loop | None:
    """The linear recurrence a serial segment runs (``translate.scan``), where it is one marked loop."""
    if len(seg.stmts) == 1 and isinstance(seg.stmts[0], ir.Loop) and seg.stmts[0].scan:
        return seg.stmts[0]
    return None


def walk_segments(segments: Iterable[Segment]) -> Iterator[Segment]:
    """Every segment, pre-order, including those inside host ifs and loops."""
    for seg in segments:
        yield seg
        if isinstance(seg, HostIf):
            yield from walk_segments(seg.then)
            yield from walk_segments(seg.orelse)
        elif isinstance(seg, (HostLoop, HostWhile)):
            yield from walk_segments(seg.body)


def device_segments(segments: Iterable[Segment]) -> tuple[DeviceNest | DeviceSerial, ...]:
    return tuple(s for s in walk_segments(segments) if isinstance(s, (DeviceNest, DeviceSerial)))


# ---------------------------------------------------------------- partition


class PartitionError(ValueError):
    """The body cannot be split into host and device code (for example a
    ``Return`` inside a loop whose header reads an array)."""


def partition(kernel: ir.Kernel) -> tuple[Segment, ...]:
    """Split ``kernel.body`` into host and device segments (module docstring). A RETURN that
    ends the routine is left out: every target's host code ends there anyway, with its own
    return (the function's value, a status or nothing)."""
    body = kernel.body
    while body and isinstance(body[-1], ir.Return):
        body = body[:-1]
    return _Partitioner(replace(kernel, body=body)).run()


class _Partitioner:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.counts = {"loop": 0, "serial": 0, "extern": 0, "scan": 0}
        self.params = {d.name for d in kernel.params}
        self.always_live = {
            d.name for d in kernel.params if isinstance(d, ir.Scalar) and d.intent.writes
        } | ({kernel.name} if kernel.result is not None else set())
        self.all_stmts = kernel.body

    def run(self) -> tuple[Segment, ...]:
        return self.stmts(self.kernel.body, frozenset())

    def name(self, kind: str) -> str:
        self.counts[kind] += 1
        return f"{self.kernel.name}_{kind}{self.counts[kind]}"

    # ---- classification

    def stmts(self, stmts: tuple[ir.Stmt, ...], after: frozenset[str]) -> tuple[Segment, ...]:
        """``after``: scalars that may be read after this statement list."""
        segs: list[Segment] = []
        pending: list[ir.Stmt] = []  # device-serial statements to merge
        host: list[ir.Stmt] = []
        suffix_reads = [frozenset()] * (len(stmts) + 1)
        for k in range(len(stmts) - 1, -1, -1):
            suffix_reads[k] = suffix_reads[k + 1] | scalar_reads(stmts[k])

        def flush_host() -> None:
            if host:
                segs.append(HostBlock(tuple(host)))
                host.clear()

        def flush_serial(k: int) -> None:
            if pending:
                segs.append(self.serial(tuple(pending), after | suffix_reads[k]))
                pending.clear()

        for k, s in enumerate(stmts):
            live = after | suffix_reads[k + 1]
            kind = self.classify(s, live)
            if kind == "host":
                flush_serial(k)
                host.append(s)
                continue
            flush_host()
            if kind == "serial":
                pending.append(s)
                continue
            flush_serial(k)
            if kind == "hostif":
                assert isinstance(s, ir.If)
                segs.append(HostIf(s.cond, self.stmts(s.then, live), self.stmts(s.orelse, live)))
            elif kind == "hostwhile":
                assert isinstance(s, ir.While)
                segs.append(HostWhile(s.cond, _merge_host(list(self.stmts(s.body, live | scalar_reads(s))))))
            elif kind == "extern":
                assert isinstance(s, ir.Extern)
                segs.append(DeviceExtern(self.name("extern"), s, s.line))
            elif kind == "scan":  # a serial segment of its own: a target may run it as a parallel scan
                segs.append(self.serial((s,), live, "scan"))
            elif kind == "nest":
                assert isinstance(s, ir.Loop)
                segs.append(self.nest(s, ()))
            else:  # hostloop
                assert isinstance(s, ir.Loop)
                segs.append(self.host_loop(s, live))
        flush_host()
        flush_serial(len(stmts))
        return tuple(segs)

    def classify(self, s: ir.Stmt, live: frozenset[str]) -> str:
        if isinstance(s, ir.Extern):
            return "extern"
        if not arrays_touched(s) and not has_parallel(s):
            return "host"
        if isinstance(s, ir.If):
            if not arrays_touched(s.cond) and (has_parallel(s) or has_exit(s)):
                return "hostif"
        elif isinstance(s, ir.While):
            if not arrays_touched(s.cond) and (has_parallel(s) or has_exit(s)):
                return "hostwhile"
        elif isinstance(s, ir.Loop) and not header_arrays(s):
            if s.scan:
                return "scan"
            if s.kind is ir.LoopKind.PARALLEL and not has_exit(s):
                return "nest"
            if s.kind is ir.LoopKind.SERIAL and has_parallel(s) and self.hostable(s, live):
                return "hostloop"
        if has_exit(s):
            raise PartitionError(
                f"a return, error call or host call inside device code (line {first_line([s]) or '?'}): "
                "its condition reads an array"
            )
        return "serial"

    def hostable(self, loop: ir.Loop, after: frozenset[str]) -> bool:
        """Whether the serial ``loop`` can run on the host, launching its nests:
        every statement of its body that touches an array is a loop, a host
        branch, or moves into a nest (``translate.sinking``)."""
        body = loop.body
        for k, s in enumerate(body):
            if isinstance(s, (ir.Loop, ir.Extern)):
                continue
            if isinstance(s, ir.If):
                if not arrays_touched(s) or (not arrays_touched(s.cond) and (has_parallel(s) or has_exit(s))):
                    continue
                if guardable(body, k, after, self.always_live):
                    continue
                return False
            if not arrays_touched(s):
                continue
            if sink_target(body, k, after, self.always_live) is None:
                return False
        return True

    def host_loop(self, loop: ir.Loop, after: frozenset[str]) -> HostLoop:
        live = after | scalar_reads(loop)  # the next iteration reads the whole body again
        body = loop.body
        sunk: dict[int, list[ir.Stmt]] = {}
        keep: list[bool] = [True] * len(body)
        for k, s in enumerate(body):
            if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and arrays_touched(s):
                target = sink_target(body, k, after, self.always_live)
                if target is None:
                    continue
                sunk.setdefault(target, []).append(s)
                keep[k] = False
            elif isinstance(s, ir.If) and arrays_touched(s.cond) and guardable(body, k, after, self.always_live):
                sunk.setdefault(k, [])
        segs: list[Segment] = []
        rest: list[ir.Stmt] = []
        for k, s in enumerate(body):
            if not keep[k]:
                continue
            if k in sunk:
                segs.extend(self.stmts(tuple(rest), live))
                rest.clear()
                segs.append(self.launched(s, tuple(sunk[k])))
            else:
                rest.append(s)
        segs.extend(self.stmts(tuple(rest), live))
        return HostLoop(loop.var, loop.start, loop.stop, loop.step, _merge_host(segs))

    def launched(self, s: ir.Stmt, sunk: tuple[ir.Stmt, ...]) -> DeviceNest:
        """The nest a host loop launches for ``s``: a parallel loop, or a guarded
        ``If`` (its nest with the body under the condition)."""
        if isinstance(s, ir.Loop):
            return self.nest(s, sunk)
        parts = guard_parts(s)
        assert isinstance(s, ir.If) and parts is not None
        assigns, loop = parts
        return self.nest(loop, sunk, (s.cond, assigns))

    # ---- device segments

    def nest(self, loop: ir.Loop, sunk: tuple[ir.Stmt, ...],
             guard: tuple[ir.Expr, tuple[ir.Assign, ...]] | None = None) -> DeviceNest:
        """``loop`` (and up to two directly nested parallel loops) as one nest;
        ``sunk`` statements start its body; with ``guard`` = (condition,
        assignments) the body runs as ``If(condition, assignments + body)``."""
        loops = [loop]
        reduced = ir.reduced(loop.reductions)
        while len(loops) < 3:
            inner = loops[-1].body
            if len(inner) != 1 or not isinstance(inner[0], ir.Loop):
                break
            cand = inner[0]
            if cand.kind is not ir.LoopKind.PARALLEL or header_arrays(cand) or has_exit(cand):
                break
            if not ir.reduced(cand.reductions) <= reduced:
                break
            outer_vars = {lp.var for lp in loops}
            if (scalar_reads(cand.start) | scalar_reads(cand.stop) | scalar_reads(cand.step)) & outer_vars:
                break
            loops.append(cand)
        body = sunk + loops[-1].body
        if guard is not None:
            body = sunk + (ir.If(guard[0], guard[1] + loops[-1].body),)
        reductions = loop.reductions
        red = ir.reduced(reductions)
        bound = {lp.var for lp in loops} | (many(body, loop_vars) - many(body, _assigned))
        private = (many(body, scalar_writes) | set(loop.private)) - red - bound
        headers = many([lp.start for lp in loops] + [lp.stop for lp in loops] + [lp.step for lp in loops],
                        scalar_reads)
        arrays = many(body, arrays_touched)
        reads = many(body, scalar_reads) | headers | stride_scalars(self.kernel, arrays)
        scalars_in = reads - bound - private - red
        return DeviceNest(
            name=self.name("loop"),
            loops=tuple(replace(lp, body=()) for lp in loops[:-1]) + (loops[-1],),
            body=body,
            reductions=reductions,
            scalars_in=_order(scalars_in, self.kernel),
            arrays=self._arrays(arrays),
            private=_order(private, self.kernel),
            line=loop.line,
        )

    def serial(self, stmts: tuple[ir.Stmt, ...], after: frozenset[str], kind: str = "serial") -> DeviceSerial:
        bound = many(stmts, loop_vars) - many(stmts, _assigned)
        writes = many(stmts, scalar_writes) - bound
        reads = many(stmts, scalar_reads) - bound
        arrays = many(stmts, arrays_touched)
        out = writes & (set(after) | self.always_live)
        local_only = {n for n in writes | reads if n not in self.params and self._only_in(n, stmts)}
        scalars_in = ((reads | writes) - out - local_only) | (stride_scalars(self.kernel, arrays) - out)
        return DeviceSerial(
            name=self.name(kind),
            stmts=stmts,
            scalars_in=_order(scalars_in, self.kernel),
            scalars_out=_order(out, self.kernel),
            arrays=self._arrays(arrays),
            line=first_line(stmts),
            on_host=kind == "serial" and run_time_depth(stmts) >= 2,
        )

    def _only_in(self, name: str, stmts: tuple[ir.Stmt, ...]) -> bool:
        inside = sum(count_refs(s, name) for s in stmts)
        total = sum(count_refs(s, name) for s in self.all_stmts)
        return inside == total and name not in self.always_live

    def _arrays(self, names: set[str]) -> tuple[str, ...]:
        return _order(names, self.kernel)


def run_time_depth(stmts: Iterable[object]) -> int:
    """How deep loops whose trip counts are not constants nest in ``stmts``."""
    def depth(node: object) -> int:
        inner = max((depth(c) for c in ir.children(node)), default=0)
        if isinstance(node, ir.Loop):
            constant = all(isinstance(e, ir.Const) for e in (node.start, node.stop, node.step))
            return inner + (0 if constant else 1)
        return inner

    return max((depth(s) for s in stmts), default=0)


def _merge_host(segs: list[Segment]) -> tuple[Segment, ...]:
    out: list[Segment] = []
    for s in segs:
        if out and isinstance(s, HostBlock) and isinstance(out[-1], HostBlock):
            out[-1] = HostBlock(out[-1].stmts + s.stmts)
        else:
            out.append(s)
    return tuple(out)
