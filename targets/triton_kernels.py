"""Device kernels of the Triton target: one ``@triton.jit`` function per
``DeviceNest`` (a BLOCK-wide tile over the collapsed trip count, ``if``s as
predication; ``targets.triton_serial`` writes the ``DeviceSerial`` ones). Each
emitter returns the kernel text and the launch description the launcher writer
turns into host code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from targets.defaults import TRITON
from targets.planes import Queue, queues
from targets.splits import Split
from targets.triton_expr import (
    TL_DTYPE,
    DeviceExpr,
    UnsupportedExpr,
    dev_dtype,
    fold,
    literal,
    py_name,
)
from targets.triton_helpers import pair_join
from targets.triton_partials import REDUCE, identity, loc_identity, partial_arrays, partial_slots
from translate import argreduce, ir
from translate.flat import FlatIndex
from translate.irquery import arrays_written
from translate.partition import DeviceNest, fastest_first
from translate.simplify import const_int, simplify


class Lines:
    """An indented code buffer."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.level = 0

    def __call__(self, text: str = "") -> None:
        self.lines.append(("    " * self.level + text) if text else "")

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self(header)
        self.level += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self("pass")
            self.level -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Launch:
    """What the launcher needs to call one kernel."""

    kernel: str
    args: list[str]  # host expressions, in the kernel's parameter order (BLOCK excluded)
    trips: list[tuple[str, ir.Loop]] = field(default_factory=list)  # (name, loop) of a nest
    partials: list[ir.Reduction] = field(default_factory=list)
    outs: list[tuple[str, ir.DType]] = field(default_factory=list)  # serial scalars copied back
    nest: bool = True
    split: tuple[str, ir.Loop] | None = None  # (trip name, loop) of a serial loop cut into chunks (grid axis 1)
    # targets.planes: (trip names fastest first, rows, planes) of a nest walked by planes (3-D) or rows (2-D)
    tile: tuple[tuple[str, ...], int, int] | None = None
    tiles: int = 1  # BLOCK-wide tiles one program of a reduction sums (TILES)
    written: int = 0  # arrays the nest stores to
    flat: bool = False  # a nest of two or more loops addressed by the flat lane offset alone (translate.flat)




class _Emitter:
    """Shared by both kernel kinds: parameters, prologue, statements."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.out = Lines()
        self.dev = DeviceExpr(kernel)
        self.params: list[str] = []
        self.launch_args: list[str] = []
        self.prologue: list[str] = []
        self.counter = 0

    def decl(self, name: str) -> ir.Decl:
        try:
            return self.kernel.param(name)
        except KeyError:  # undeclared: the type its uses give it (a host loop variable: an integer)
            for n in ir.walk(self.kernel):
                if isinstance(n, ir.Var) and n.name == name:
                    return ir.Scalar(name, n.dtype)
            return ir.Scalar(name, ir.DType.I64)

    def add_arrays(self, names: tuple[str, ...]) -> None:
        for a in names:
            self.params.append(py_name(a))
            self.launch_args.append(py_name(a))

    def add_scalars(self, names: tuple[str, ...]) -> None:
        for name in names:
            decl = self.decl(name)
            if isinstance(decl, ir.Array):
                raise UnsupportedExpr(decl, f"array {name} passed as a scalar")
            var, dt = py_name(name), decl.dtype
            if dt is ir.DType.F64:  # annotated: Triton passes a plain Python float as fp32
                self.params.append(f"{var}: tl.float64")
                self.launch_args.append(f"float({var})")
                # a 0-d fp64 value: the interpreter keeps the parameter a Python float, which it
                # rounds to fp32 where no fp64 operand meets it (stored as is, added to a literal)
                self.prologue.append(f"{var} = tl.full((), {var}, tl.float64)")
                continue
            self.params.append(var)
            if dt is ir.DType.CHAR:
                self.launch_args.append(f"ord({var})")
                self.prologue.append(f"{var} = tl.cast({var}, tl.int64)")
            elif dt.is_int:
                self.launch_args.append(f"int({var})")
                self.prologue.append(f"{var} = tl.cast({var}, tl.int64)")
            elif dt is ir.DType.BOOL:
                self.launch_args.append(f"bool({var})")
            else:
                self.launch_args.append(f"float({var})")
                if dt is not ir.DType.F32:
                    self.prologue.append(f"{var} = tl.cast({var}, {TL_DTYPE[dt]})")

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def value(self, e: ir.Expr, dtype: ir.DType, shape: str = "[]") -> str:
        """``e`` as a tensor of exactly ``dtype`` (literals materialised, since
        Triton would otherwise make an fp32 constant first)."""
        e = fold(e)
        if isinstance(e, ir.Const):
            return f"tl.full({shape}, {literal(e.value, dtype, True)}, {dev_dtype(dtype)})"
        text = self.dev.typed(e, dtype)
        exact = e.dtype == dtype and (dtype.is_float or dtype is ir.DType.BOOL)
        ints = dtype.is_int and e.dtype.is_int and not any(isinstance(n, ir.Load) for n in ir.walk(e))
        return text if exact or ints or text.startswith("tl.cast(") else f"tl.cast({text}, {dev_dtype(dtype)})"

    def var_dtype(self, name: str) -> ir.DType:
        decl = self.decl(name)
        return decl.dtype

    def trip_text(self, lp: ir.Loop) -> tuple[str, str]:
        """(trip-count expression, index expression of the loop variable given ``k``)."""
        start, stop, step = fold(lp.start), fold(lp.stop), fold(lp.step)
        lo, hi = self.dev.typed(start, ir.DType.I64), self.dev.typed(stop, ir.DType.I64)
        if isinstance(step, ir.Const):
            s = int(step.value)
            if s == 0:
                raise UnsupportedExpr(lp, "loop with step 0")
            trip = f"({hi} - {lo} + {s - 1}) // {s}" if s > 0 else f"({lo} - {hi} + {-s - 1}) // {-s}"
            return trip, f"{lo} + {s} * {{k}}"
        self.dev.helpers.add("_kt_trip")
        st = self.dev.typed(step, ir.DType.I64)
        return f"_kt_trip({lo}, {hi}, {st})", f"{lo} + ({st}) * {{k}}"

    def check_no_exit(self, s: ir.Stmt) -> None:
        if isinstance(s, (ir.Return, ir.ErrorCall)) or (isinstance(s, ir.HostCall) and s.kind == "stop"):
            raise UnsupportedExpr(s, "return or error call inside device code")

    def header(self, name: str, extra: list[str]) -> None:
        self.out("@triton.jit")
        self.out(f"def {name}({', '.join(self.params + extra)}):")


class NestEmitter(_Emitter):
    """A ``DeviceNest`` as a BLOCK-sized 1-D tile over the collapsed loops."""

    def __init__(self, kernel: ir.Kernel, nest: DeviceNest, split: Split | None = None,
                 tile: tuple[int, int] | None = None, queues: bool = True, masks_after_walk: bool = False,
                 shared_subscript_first: bool = False, flat: FlatIndex | None = None) -> None:
        super().__init__(kernel)
        self.flat = flat  # translate.flat: accesses addressed at the lane's flat index
        self.nest = nest
        self.split = split  # targets.splits: the serial loop in chunks along grid axis 1
        self.tile = tile  # targets.planes: (rows, planes) of a 3-D nest walked by planes
        self.queues = queues  # a walk's reads of neighbouring planes from a register queue
        self.masks_after_walk = masks_after_walk  # Schedule.masks_after_walk: walks mask their lanes once, at the end
        self.unguarded = ""  # the mask under which scalar assignments need no guard (late masks)
        self.dev.mask = "mask"
        self.dev.shared_subscript_first = shared_subscript_first  # Schedule.shared_subscript_first
        self.vector = self.dev.vector
        self.vector |= {lp.var for lp in nest.loops} | set(nest.private) | ir.reduced(nest.reductions)
        self.is_vector = self.dev.is_vector

    def emit(self) -> tuple[str, Launch]:
        nest = self.nest
        for lp in nest.loops:
            if any(isinstance(n, ir.Load) for e in (lp.start, lp.stop, lp.step) for n in ir.walk(e)):
                raise UnsupportedExpr(lp, "loop bounds read an array")
        self.add_arrays(nest.arrays)
        self.add_scalars(nest.scalars_in)
        trips = [(f"{py_name(lp.var)}_trip", lp) for lp in nest.loops]
        extra = [t for t, _ in trips] + partial_arrays(list(nest.reductions))
        if any(r.loc for r in nest.reductions) and (len(nest.loops) > 1 or self.tile or self.split):
            raise UnsupportedExpr(nest.reductions[0], "a pair reduction over more than one loop")
        split = (f"{py_name(self.split.loop.var)}_trip", self.split.loop) if self.split else None
        if split:
            extra.append(split[0])
        if split:
            extra.append("CHUNK")
        extra.append("BLOCK: tl.constexpr")
        order = fastest_first(nest, self.kernel)
        if self.tile is not None:
            extra += (["ROWS: tl.constexpr"] if len(order) == 3 else []) + ["PLANES: tl.constexpr"]
            names = tuple(trips[k][0] for k in order)
            text = self.emit_planes(order, trips, extra)
            launch = Launch(nest.name, self.launch_args + [t for t, _ in trips], trips, list(nest.reductions),
                            tile=(names, *self.tile), written=len(arrays_written(nest.body)))
            return text, launch
        # a reduction's program sums TILES blocks before it writes its partial (one partial per
        # 256 elements made a re-rolled DASUM markedly slower than one per 2048: vasum in
        # benchmarks/region_bench.py)
        tiles = TRITON.reduce_tiles if nest.reductions and self.split is None else 1
        if tiles > 1 and any(r.loc for r in nest.reductions):
            tiles = TRITON.pair_tiles
        if tiles > 1:
            extra.append("TILES: tl.constexpr")
        body = Lines()
        body.level = 1
        self.out = body
        body("pid = tl.program_id(0)")
        body("zero_lanes = tl.zeros([BLOCK], tl.int64)  # broadcasts lane-invariant addresses")
        for r in nest.reductions:
            body(f"{py_name(r.var)} = tl.full([BLOCK], {identity(r.op, r.dtype)}, {dev_dtype(r.dtype)})")
            if r.loc:  # each lane's first iteration reaching its value: lanes visit theirs in order
                better = "a larger" if r.op == "maxloc" else "a smaller"
                body(f"{py_name(r.loc)} = tl.full([BLOCK], {loc_identity(r)}, {dev_dtype(r.loc_dtype)})"
                     f"  # the lane's first iteration at its best: it visits them in order, so only {better}"
                     " value moves it")
        if tiles > 1:
            with body.block("for tile in tl.static_range(TILES):  # unrolled: the tiles' loads overlap"):
                self.lanes("(pid.to(tl.int64) * TILES + tile) * BLOCK", order, trips)
        else:
            self.lanes("pid.to(tl.int64) * BLOCK", order, trips)
        self.store_partials()
        _drop_unused_zero_lanes(body)
        launch = Launch(nest.name, self.launch_args + [t for t, _ in trips], trips,
                        list(nest.reductions), split=split, tiles=tiles,
                        written=len(arrays_written(nest.body)), flat=self.flat is not None and self.flat.whole)
        return self.head(extra).text() + body.text(), launch

    def lanes(self, first: str, order: tuple[int, ...], trips: list[tuple[str, ir.Loop]]) -> None:
        """The BLOCK lanes from flat index ``first`` on: mask, loop variables, privates, the body."""
        body = self.out
        if len(order) > 1:
            body(f"kt_first = {first}")
            first = "kt_first"
        body(f"offs = {first} + tl.arange(0, BLOCK)")
        body(f"mask = offs < {' * '.join(t for t, _ in trips)}")
        self.dev.flat = self.flat
        if self.flat is None or not self.flat.whole:
            self.decompose(order, trips)
        self.private_lines()
        if self.split is not None:
            self.split_loop(self.split)
        else:  # a lane visits its iterations in order: a pair's update needs no tie test
            for s in argreduce.in_order(self.nest.body, [r for r in self.nest.reductions if r.loc]):
                self.stmt(s, "mask")

    def private_lines(self) -> None:
        """The nest's private scalars, one lane each, zeroed."""
        for name in self.nest.private:
            self.out(f"{py_name(name)} = tl.zeros([BLOCK], {dev_dtype(self.var_dtype(name))})")

    def head(self, extra: list[str]) -> Lines:
        nest = self.nest
        head = Lines()
        head("@triton.jit")
        head(f"def {nest.name}({', '.join(self.params + extra)}):")
        head.level = 1
        loops = ", ".join(f"{lp.var} in [{ir.expr_str(lp.start)}, {ir.expr_str(lp.stop)})"
                          + (f" step {ir.expr_str(lp.step)}" if fold(lp.step) != ir.Const(1, lp.step.dtype)
                             else "") for lp in nest.loops)
        origin = f"{self.kernel.origin.path}:{nest.line}" if nest.line else str(self.kernel.origin)
        head(f'"""Parallel nest at {origin}: {loops}."""')
        for p in self.prologue:
            head(p)
        return head

    def emit_planes(self, order: tuple[int, ...], trips: list[tuple[str, ir.Loop]], extra: list[str]) -> str:
        """A 3-D nest walked by planes (``targets.planes``): the program's BLOCK lanes are a
        ROWS-row tile of the two fast loops, the program walks PLANES planes of the slow one; a
        2-D nest: BLOCK lanes of the fast loop walking PLANES rows, its reductions summed over
        the walk and stored as one partial per program."""
        body = Lines()
        body.level = 1
        self.out = body
        (fast, lp_f), (slow, lp_s) = trips[order[0]], trips[order[-1]]
        body("pid = tl.program_id(0).to(tl.int64)")
        body("lane = tl.arange(0, BLOCK)")
        if len(order) == 3:
            row, lp_r = trips[order[1]]
            body("WIDTH = BLOCK // ROWS  # constexpr")
            body(f"across = tl.cdiv({fast}, WIDTH)")
            body(f"down = tl.cdiv({row}, ROWS)")
            body(f"{py_name(lp_f.var)}_k = (pid % across) * WIDTH + lane % WIDTH")
            body(f"{py_name(lp_r.var)}_k = (pid // across % down) * ROWS + lane // WIDTH")
            body("first = pid // across // down * PLANES")
            body(f"mask = ({py_name(lp_f.var)}_k < {fast}) & ({py_name(lp_r.var)}_k < {row})")
            fast_loops = (lp_f, lp_r)
        else:
            body(f"across = tl.cdiv({fast}, BLOCK)")
            body(f"{py_name(lp_f.var)}_k = (pid % across) * BLOCK + lane")
            body("first = pid // across * PLANES")
            body(f"mask = {py_name(lp_f.var)}_k < {fast}")
            fast_loops = (lp_f,)
        body("zero_lanes = tl.zeros([BLOCK], tl.int64)  # broadcasts lane-invariant addresses")
        for lp in fast_loops:
            body(self.index_line(lp, f"{py_name(lp.var)}_k"))
        for r in self.nest.reductions:
            body(f"{py_name(r.var)} = tl.full([BLOCK], {identity(r.op, r.dtype)}, {dev_dtype(r.dtype)})")
        self.private_lines()
        self.vector.discard(lp_s.var)  # one plane at a time: a scalar
        qs = queues(self.nest, lp_s.var) if self.queues else []
        regs: dict[ir.Load, ir.Expr] = {}
        if qs:
            # one new load per plane, the others carried from the previous planes (whether a walk keeps
            # queues: targets.planes.queued; side by side: docs/measurements/tuning-evidence.md)
            body(f"# register queue along {lp_s.var}: the run's first planes loaded before the walk")
            body(f"live = mask & (zero_lanes + first < {slow})")
            body(self.index_line(lp_s, "first"))
            self.dev.mask = "live"
            for g, q in enumerate(qs):
                names = q.names(g)
                regs |= {load: ir.Var(n, load.dtype) for load, n in zip(q.slots, names, strict=True)}
                self.vector.update(names)
                for load, n in zip(q.slots[:-1], names[:-1], strict=True):
                    body(f"{n} = {self.dev(load)}")
        if self.masks_after_walk:
            # scalars assigned in every lane, lanes past the fast loops too (their loads and stores stay
            # masked); those lanes' sums are replaced by the identity once, after the walk. The last
            # run of a column walks only the planes there are (a loop of its own: a kernel's registers
            # are those of its largest path, so a guarded tail would cost every run)
            with body.block(f"if first + PLANES <= {slow}:"):
                self.walk_run(qs, regs, lp_s, "range(PLANES)", slow, guarded=False)
            with body.block("else:"):
                # int32 like range(PLANES)'s variable: Triton's if needs one type per variable
                self.walk_run(qs, regs, lp_s, f"range(0, ({slow} - first).to(tl.int32))", slow, guarded=False)
            for r in self.nest.reductions:
                v = py_name(r.var)
                body(f"{v} = tl.where(mask, {v}, {identity(r.op, r.dtype)})")
        else:
            # a constant trip count, the last run's extra planes masked off: Triton pipelines the
            # loads of such a loop (dynamic bounds ran far below the constant count in a 128x2 tile
            # walking 8 planes: docs/measurements/tuning-evidence.md)
            self.walk_run(qs, regs, lp_s, "range(PLANES)", slow, guarded=True)
        self.store_partials()
        return self.head(extra).text() + body.text()

    def walk_run(self, qs: list[Queue], regs: dict[ir.Load, ir.Expr], lp_s: ir.Loop, runs: str, slow: str,
                 guarded: bool) -> None:
        """The walk of one program over planes ``runs`` of ``lp_s`` (``slow`` of them in all).
        ``guarded``: a plane past the last is masked off and every scalar assignment guarded by the
        lanes' mask; else every plane of ``runs`` exists and scalars are assigned without guards
        (``Schedule.masks_after_walk``)."""
        body, plane = self.out, py_name(lp_s.var)
        with body.block(f"for run in {runs}:"):
            body(f"{plane}_k = first + run")
            if guarded:
                # the plane's condition as lanes: Triton's interpreter cannot combine a 0-d condition with a mask
                body(f"in_plane = mask & (zero_lanes + {plane}_k < {slow})")
            else:
                body("in_plane = mask")
            body(self.index_line(lp_s, f"{plane}_k"))
            self.dev.mask = "in_plane"
            for g, q in enumerate(qs):
                body(f"{q.names(g)[-1]} = {self.dev(q.slots[-1])}")
            self.unguarded = "" if guarded else "in_plane"
            for s in self.nest.body:
                self.stmt(ir.replace_exprs(s, regs), "in_plane")  # type: ignore[arg-type]
            self.unguarded = ""
            for g, q in enumerate(qs):
                names = q.names(g)
                body(f"{', '.join(names[:-1])} = {', '.join(names[1:])}")

    def store_partials(self) -> None:
        """Each reduction's lanes combined and stored as the program's partial, in its row
        (:func:`partial_slots`)."""
        slots = partial_slots(list(self.nest.reductions))
        for k, r in enumerate(self.nest.reductions):
            if r.loc:
                self.store_pair(r)
                continue
            if r.op not in REDUCE:
                raise UnsupportedExpr(r, f"reduction operator '{r.op}'")
            if r.op == "mul":
                self.dev.helpers.add("_kt_mul")
            array, row = slots[k]
            at = {0: "", 1: "tl.num_programs(0) + "}.get(row, f"{row} * tl.num_programs(0) + ")
            self.out(f"tl.store({array} + {at}pid, {REDUCE[r.op].format(v=py_name(r.var))})")

    def store_pair(self, r: ir.Reduction) -> None:
        """A pair reduction's lanes joined in one reduction over values and iterations (the best
        value, the first iteration among the lanes holding it, that lane's value: of 0.0 and -0.0
        the one it reached) and stored in the two rows of the partials: values, then iterations.
        One reduction of the pair, not one of the values and one of the iterations after it: the
        first-max kernel ran faster so, ptxas keeping four of the lane's loads in flight instead of
        three (benchmarks/probes/pair_kernel_forms.py)."""
        v, loc = py_name(r.var), py_name(r.loc)
        join = pair_join(r.op, r.loc_first)
        self.dev.helpers.add(join)
        self.out(f"kt_top, kt_at = tl.reduce(({v}, {loc}), 0, {join})")
        self.out(f"tl.store({v}_part + pid, kt_top)")
        self.out(f"tl.store({v}_part + tl.num_programs(0) + pid, kt_at)")

    def index_line(self, lp: ir.Loop, k_text: str) -> str:
        """``var = start + step * k`` (folded) of the loop ``lp`` at iteration ``k_text``."""
        var = py_name(lp.var)
        start, step = fold(lp.start), fold(lp.step)
        if start == ir.Const(0, start.dtype) and step == ir.Const(1, step.dtype):
            return f"{var} = {k_text}"
        if step == ir.Const(1, step.dtype):
            return f"{var} = {self.dev.typed(start, ir.DType.I64)} + {self.dev._wrap(k_text)}"
        s = self.dev.typed(step, ir.DType.I64)
        return f"{var} = {self.dev.typed(start, ir.DType.I64)} + {self.dev._wrap(s)} * ({k_text})"

    def split_loop(self, split: Split) -> None:
        """The serial loop's chunk ``program_id(1)``: the contributions summed in a
        register tile, then added to the element with one ``tl.atomic_add``."""
        body, lp = self.out, split.loop
        target = split.store.target
        assert isinstance(target, ir.Load)
        dt = self.kernel.param(target.array).dtype
        var = py_name(lp.var)
        body(f"part = tl.zeros([BLOCK], {dev_dtype(dt)})")
        body("first = tl.program_id(1).to(tl.int64) * CHUNK")
        body(f"last = tl.minimum(first + CHUNK, {var}_trip)")
        self.vector.discard(lp.var)
        index = self.index_line(lp, f"{var}_k")
        direct = index == f"{var} = {var}_k"  # from 0 step 1: the loop variable itself
        with body.block(f"for {var if direct else var + '_k'} in range(first, last):"):
            if not direct:
                body(index)
            for s in lp.body:
                if s is split.store:
                    self.dev.mask = "mask"
                    body(f"part += {self.value(split.addend, dt, '[BLOCK]')}")
                else:
                    self.stmt(s, "mask")
        self.dev.mask = "mask"
        body(f"tl.atomic_add({self.dev.pointer(target.array, target.index)}, part, mask=mask)")

    def decompose(self, order: tuple[int, ...], trips: list[tuple[str, ir.Loop]]) -> None:
        """The loop variables of each lane from its flat index ``offs``. Over several loops the
        program's first index ``kt_first`` is split once (int64 scalars ``kt_q``) and each lane's
        part in int32 (``kt_lane``: below a trip count plus BLOCK). GPUs divide int64 in software;
        an int64 division per lane made rank1_concurrent clearly slower than this split
        (benchmarks/region_bench.py)."""
        body = self.out
        if len(order) == 1:
            body(self.index_line(trips[order[0]][1], "offs"))
            return
        q, lane = "kt_first", "tl.arange(0, BLOCK)"
        for pos, k in enumerate(order):
            name, lp = trips[k]
            if pos == len(order) - 1:
                body(self.index_line(lp, f"{q} + {lane}"))
                return
            body(f"kt_lane{pos} = ({q} % {name}).to(tl.int32) + {lane}")
            note = "  # fastest: the contiguous index" if pos == 0 else ""
            body(self.index_line(lp, f"(kt_lane{pos} % {name}).to(tl.int64)") + note)
            body(f"kt_q{pos} = {q} // {name}")
            q, lane = f"kt_q{pos}", f"kt_lane{pos} // {name}"

    def stmt(self, s: ir.Stmt, mask: str) -> None:
        self.check_no_exit(s)
        if isinstance(s, ir.While):
            raise UnsupportedExpr(s, "a DO WHILE inside a parallel nest (each lane its own trip count)")
        self.dev.mask = mask
        body = self.out
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Var):
                name = s.target.name
                dt = self.var_dtype(name)
                self.vector.add(name)
                val = fold(s.value)
                text = literal(val.value, dt, True) if isinstance(val, ir.Const) else self.value(val, dt)
                if mask != self.unguarded:
                    body(f"{py_name(name)} = tl.where({mask}, {text}, {py_name(name)})")
                elif isinstance(val, ir.Const):  # still one value per lane
                    body(f"{py_name(name)} = {self.value(val, dt, '[BLOCK]')}")
                elif not self.is_vector(val):
                    body(f"{py_name(name)} = tl.zeros([BLOCK], {dev_dtype(dt)}) + {text}")
                else:
                    body(f"{py_name(name)} = {text}")
            else:
                decl = self.kernel.param(s.target.array)
                text = self.value(s.value, decl.dtype, "[BLOCK]")
                self.dev.mask = mask
                load = ir.Load(s.target.array, s.target.index, decl.dtype)
                body(f"tl.store({self.dev.pointer(load.array, load.index)}, {text}, mask={mask})")
        elif isinstance(s, ir.If):
            cond = fold(s.cond)
            if isinstance(cond, ir.Const):
                for t in (s.then if cond.value else s.orelse):
                    self.stmt(t, mask)
                return
            c = self.fresh("cond")
            if self.is_vector(cond):
                body(f"{c} = {self.dev.typed(cond, ir.DType.BOOL)}")
            else:  # made a tile through int64: the interpreter mis-broadcasts scalar int1 compares
                body(f"{c} = (zero_lanes + tl.cast({self.dev.typed(cond, ir.DType.BOOL)}, tl.int64)) != 0")
            m_then = self.fresh("mask")
            body(f"{m_then} = {mask} & {c}")
            for t in s.then:
                self.stmt(t, m_then)
            if s.orelse:
                m_else = self.fresh("mask")
                body(f"{m_else} = {mask} & ~{c}")
                for t in s.orelse:
                    self.stmt(t, m_else)
        elif isinstance(s, ir.Loop):
            self.loop(s, mask)
        else:
            raise UnsupportedExpr(s, f"statement {type(s).__name__} in a parallel nest")
        self.dev.mask = mask

    def loop(self, lp: ir.Loop, mask: str) -> None:
        """A loop inside the nest body runs in every lane; lane-dependent
        bounds iterate to the largest trip count with a per-lane mask."""
        body = self.out
        var = py_name(lp.var)
        header_vector = any(self.is_vector(e) for e in (lp.start, lp.stop, lp.step))
        # the variable (start + step*k) differs between lanes only when start or step does; a
        # lane-dependent stop alone varies the trip count, not the value (its addresses then need
        # broadcasting to the tile, which the pointer does for lane-invariant indices)
        if any(self.is_vector(e) for e in (lp.start, lp.step)):
            self.vector.add(lp.var)
        else:
            self.vector.discard(lp.var)
        start, stop, step = fold(lp.start), fold(lp.stop), fold(lp.step)
        self.dev.mask = mask
        if not header_vector and step == ir.Const(1, step.dtype):
            with body.block(f"for {var} in range({self.dev.typed(start, ir.DType.I64)}, "
                            f"{self.dev.typed(stop, ir.DType.I64)}):"):
                for s in lp.body:
                    self.stmt(s, mask)
            return
        trip, index = self.trip_text(lp)
        k = f"{var}_k"
        fixed = _fixed_trip(lp)
        if header_vector and fixed is not None:  # lane-dependent bounds, the same count in every lane
            loop = f"tl.static_range({fixed})" if fixed <= 8 else f"range(0, {fixed})"
            with body.block(f"for {k} in {loop}:"):
                body(f"{var} = {index.format(k=k)}")
                for s in lp.body:
                    self.stmt(s, mask)
            return
        if header_vector:
            tv = f"{var}_trips"
            body(f"{tv} = {trip}")
            hdr = f"for {k} in range(0, tl.max(tl.where({mask}, {tv}, 0), axis=0)):"
        else:
            hdr = f"for {k} in range(0, {trip}):"
        with body.block(hdr):
            body(f"{var} = {index.format(k=k)}")
            inner = mask
            if header_vector:
                inner = self.fresh("mask")
                body(f"{inner} = {mask} & ({k} < {tv})")
            for s in lp.body:
                self.stmt(s, inner)


def _drop_unused_zero_lanes(body: Lines) -> None:
    """Removes the ``zero_lanes`` line when no other line uses it."""
    at = next(i for i, t in enumerate(body.lines) if t.lstrip().startswith("zero_lanes = "))
    if "zero_lanes" not in "\n".join(body.lines[:at] + body.lines[at + 1:]):
        del body.lines[at]


def _fixed_trip(lp: ir.Loop) -> int | None:
    """The loop's trip count when it is a constant although its bounds are not
    (``do kv = k, k + 1``), else None."""
    step = fold(lp.step)
    diff = const_int(simplify(ir.BinOp("sub", lp.stop, lp.start, lp.start.dtype)))
    if not isinstance(step, ir.Const) or diff is None or not int(step.value):
        return None
    s = int(step.value)
    return max(0, (diff + s - 1) // s if s > 0 else (-diff - s - 1) // -s)
