"""Triton target: ``triton/NAME_triton.py``, a readable Python module with one
``@triton.jit`` kernel per device segment and the launcher ``NAME(...)``
(docs/CONVENTIONS.md): source parameters in order (arrays as 1-D contiguous
torch tensors linearised by layout, scalars as Python values, CHARACTER flags
as 1-character strings), keyword-only ``block``; it writes arrays in place and
returns ``{name: value}`` of out/inout scalars plus ``"result"``.

Host segments become plain Python in the launcher (integer ``div``/``mod``
through C-semantics helpers); device nests are BLOCK-wide tiles
(``targets.triton_kernels``); reductions are per-program partials combined on
the host with the variable's previous value."""

from __future__ import annotations

from collections.abc import Callable

from targets.base import Rendered, Renderer, register
from targets.defaults import TRITON
from targets.host_calls import python_lines
from targets.splits import FILL_THREADS, MIN_CHUNK
from targets.triton_expr import TORCH_DTYPE, HostExpr, UnsupportedExpr, py_name
from targets.triton_extern import (
    LIBRARY_NOTE,
    MATMUL_LIBRARY_NOTE,
    MatmulEmitter,
    conv_lines,
    epilogue_ok,
    library_matmul_lines,
    library_matmul_ok,
    output_needed,
)
from targets.triton_helpers import DEVICE_DEPENDS, DEVICE_HELPERS, HOST_DEPENDS, HOST_HELPERS, closure
from targets.triton_kernels import Launch, Lines, NestEmitter
from targets.triton_mapping import Shape, map_segments
from targets.triton_order import nest_after
from targets.triton_partials import by_dtype, partial_arrays, partials_name
from targets.triton_pending import PendingScalars
from targets.triton_results import (
    Known,
    device_results,
    joined_if,
    pair_names,
    pushed,
    segments_return,
    stmts_return,
)
from targets.triton_rows import RowEmitter
from targets.triton_scan import ScanEmitter
from targets.triton_selects import assigned, device_assign, select_lines
from targets.triton_serial import SerialEmitter
from translate import ir
from translate.irquery import scalar_reads
from translate.partition import (
    DeviceExtern,
    DeviceNest,
    DeviceSerial,
    HostBlock,
    HostIf,
    HostLoop,
    HostWhile,
    Segment,
    allocation_point,
    walk_segments,
)
from translate.schedule import Schedule

_PY_TYPE = {ir.DType.CHAR: "str", ir.DType.BOOL: "bool"}


def _pair_dtype(r: ir.Reduction) -> str:
    """The torch type of a pair reduction's partials: values and iterations in one array, both
    exactly (an int64 value: int64 rows, else float64)."""
    return TORCH_DTYPE[ir.DType.I64 if r.dtype is ir.DType.I64 else ir.DType.F64]


def module_path(kernel: ir.Kernel) -> str:
    return f"triton/{kernel.name.lower()}_triton.py"




def default_warps(launch: Launch) -> int:
    """num_warps of a nest kernel the schedule leaves at 0: Triton's default for walks; 8 for split serial loops, for
    reductions over two or more loops or of a pair, and for 1-D nests storing to two or more arrays (faster
    than 4 warps on dgemv 'N', field_summary_like and vswap; slower with 8: 1-D nests storing one array,
    such as vcopy and vscal, and the 2-D ideal_gas_like storing two;
    docs/measurements/tuning-evidence.md), else
    Triton's default (0: not written)."""
    if launch.tile is not None:
        return 0  # walks: a 2-D one with reductions ran far slower at 8 warps than at 4 (field_summary_like)
    two_arrays = len(launch.trips) == 1 and launch.written > 1
    # a pair reduction's 32 tiles (translate.argreduce): ivamax's kernel ran faster at 8 warps than at 4
    # (benchmarks/probes/pair_kernel_forms.py)
    pair = any(r.loc for r in launch.partials)
    eight = launch.split is not None or (launch.partials and len(launch.trips) > 1) or two_arrays or pair
    return 8 if eight else 0


@register
class TritonRenderer(Renderer):
    name = "triton"

    def render(self, kernel: ir.Kernel, schedule: Schedule | None = None) -> Rendered:
        schedule = schedule or self.schedule
        scheduled, segments = self.segments(kernel, schedule)
        writer = _ModuleWriter(scheduled, segments, schedule)
        try:
            text = writer.write()
        except UnsupportedExpr as err:
            raise self.unsupported(err.node, err.reason) from err
        path = module_path(kernel)
        return Rendered(files={path: text}, entry=path, symbol=py_name(kernel.name.lower()), target=self.name,
                        notes=tuple(writer.notes))


class _ModuleWriter:
    def __init__(self, kernel: ir.Kernel, segments: tuple[Segment, ...], schedule: Schedule | None = None) -> None:
        self.kernel = kernel
        self.segments = segments
        self.schedule = schedule or Schedule()
        self.host = HostExpr(kernel)
        self.kernels: list[str] = []
        self.device_helpers: set[str] = set()
        self.launcher = Lines()
        self.pending = PendingScalars(self.launcher)  # device results not yet on the host
        self.known = Known()  # constants host code assigned, while they hold (targets.triton_results)
        self.held: list[str] = []  # a serial segment's launch, written after the next nest's (targets.triton_order)
        self.uses_math = False
        self.notes: list[str] = []
        self.fused = self.plan_fusion()  # nest name -> the extern segment whose epilogue it becomes
        self.mappings = map_segments(kernel, self.schedule, segments)  # each device segment's shape

    def plan_fusion(self) -> dict[str, DeviceExtern]:
        """Matmul tails that become epilogues: the nest right after a matmul, in the same
        segment list, when it is a pure elementwise tail over the matmul's output."""
        fused: dict[str, DeviceExtern] = {}
        if not self.schedule.fuse_epilogues:
            return fused

        def scan(segs: tuple[Segment, ...]) -> None:
            for k, seg in enumerate(segs):
                if isinstance(seg, HostIf):
                    scan(seg.then)
                    scan(seg.orelse)
                elif isinstance(seg, (HostLoop, HostWhile)):
                    scan(seg.body)
                elif isinstance(seg, DeviceExtern) and k + 1 < len(segs) and not self.library_matmul(seg):
                    nxt = segs[k + 1]
                    if isinstance(nxt, DeviceNest) and epilogue_ok(self.kernel, seg, nxt):
                        fused[nxt.name] = seg

        scan(self.segments)
        return fused

    def library_matmul(self, seg: DeviceExtern) -> bool:
        """Whether this matmul runs as cuBLAS through torch (``Schedule.matmul_library``)."""
        return seg.op.op == "matmul" and self.schedule.matmul_library and library_matmul_ok(self.kernel, seg.op)

    def elided_locals(self) -> set[str]:
        """Local arrays only a fused matmul and its epilogue use, and that the epilogue
        no longer needs stored: never allocated."""
        out = set()
        by_extern = {ext.name: name for name, ext in self.fused.items()}
        nests = {s.name: s for s in walk_segments(self.segments) if isinstance(s, DeviceNest)}
        for ext_name, nest_name in by_extern.items():
            ext = next(e for e in self.fused.values() if e.name == ext_name)
            c = self.kernel.param(ext.op.outputs[0])
            if isinstance(c, ir.Array) and c not in self.kernel.params and \
                    not output_needed(self.kernel, c, nests[nest_name]):
                out.add(c.name)
        return out

    # ------------------------------------------------------------- module

    def write(self) -> str:
        k = self.kernel
        self.write_launcher()
        out = Lines()
        order = {ir.Layout.LEFT: "column-major (Fortran order)", ir.Layout.RIGHT: "row-major (C order)"}
        layouts = " or ".join(sorted({order[a.layout] for a in k.arrays})) or "none"
        out(f"# Generated by kernel-translate from {k.origin} (routine {k.name}): Triton kernels and their launcher.")
        out(f"# Arrays are 1-D contiguous torch tensors holding the source arrays linearised {layouts}.")
        for note in self.notes:
            for lib in (LIBRARY_NOTE, MATMUL_LIBRARY_NOTE):
                if lib in note:
                    out(f"# {lib[0].upper() + lib[1:]}: {note}")
        out(f'"""Triton translation of {k.name} ({k.origin})."""')
        out()
        text = "\n".join(self.launcher.lines)
        imports = [m for m in ("math", "sys") if f"{m}." in text or f"{m}." in self.host_helper_text()]
        for m in imports:
            out(f"import {m}")
        if imports:
            out()
        out("import torch")
        out("import triton")
        out("import triton.language as tl")
        body = []
        for h in closure(self.device_helpers, DEVICE_DEPENDS):
            body.append(DEVICE_HELPERS[h].strip("\n"))
        hh = self.host_helper_text()
        if hh:
            body.append(hh)
        body.extend(t.rstrip("\n") for t in self.kernels)
        body.append(self.launcher.text().rstrip("\n"))
        return out.text() + "".join("\n\n" + b + "\n" for b in body)

    def host_helper_text(self) -> str:
        names = closure(self.host.helpers, HOST_DEPENDS)
        return "\n\n".join(HOST_HELPERS[n].strip("\n") for n in names)

    # ----------------------------------------------------------- launcher

    def signature(self) -> str:
        params = []
        for p in self.kernel.params:
            if isinstance(p, ir.Array):
                params.append(f"{py_name(p.name)}: torch.Tensor")
            else:
                t = _PY_TYPE.get(p.dtype, "int" if p.dtype.is_int else "float")
                params.append(f"{py_name(p.name)}: {t}")
        params += ["*", f"block: int = {self.schedule.block}"]
        return f"def {py_name(self.kernel.name.lower())}({', '.join(params)}) -> dict[str, object]:"

    def result_dict(self) -> str:
        k = self.kernel
        items = [f'"{p.name}": {self.pending.returned(p.name)}' for p in k.params
                 if isinstance(p, ir.Scalar) and p.intent.writes]
        if k.result is not None:
            items.append(f'"result": {self.pending.returned(k.name)}')
        return "{" + ", ".join(items) + "}"

    def write_launcher(self) -> None:
        k, out = self.kernel, self.launcher
        out(self.signature())
        out.level = 1
        doc = [f'"""Runs {k.name} ({k.origin}) with Triton: arrays are written in place; returns the out/inout',
               '    scalars and "result" (the function value) by name."""']
        for d in doc:
            out(d)
        out("if block <= 0 or block & (block - 1):")
        out('    raise ValueError(f"block must be a power of two, not {block}")')
        arrays = k.arrays
        if arrays:
            out(f"dev = {py_name(arrays[0].name)}.device")
        else:
            out('dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")')
        elided = self.elided_locals()
        for d in k.locals:
            if isinstance(d, ir.Scalar):
                out(f"{py_name(d.name)} = {self.zero(d.dtype)}")
        arrays = [d for d in k.locals if isinstance(d, ir.Array) and d.name not in elided]
        # after the statements at the start that set the scalars their extents read, if any
        at = allocation_point(k, self.segments, arrays)
        if at is None:
            raise UnsupportedExpr(k, "a local array's extent is set after code that uses the array")
        if at:
            self.segs(self.segments[:at])
            self.pending.fetch({v.name for d in arrays for e in d.shape for v in ir.walk(e) if isinstance(v, ir.Var)})
        for d in arrays:
            count = " * ".join(f"max(0, {self.host(s)})" for s in d.shape) or "1"
            out(f"{py_name(d.name)} = torch.empty({count}, dtype={TORCH_DTYPE[d.dtype]}, device=dev)"
                f"  # local array")
        self.segs(self.segments[at:])
        out(f"return {self.result_dict()}")

    @staticmethod
    def zero(dtype: ir.DType) -> str:
        if dtype is ir.DType.CHAR:
            return '" "'
        if dtype is ir.DType.BOOL:
            return "False"
        return "0.0" if dtype.is_float else "0"

    def segs(self, segments: tuple[Segment, ...]) -> None:
        out = self.launcher
        start = len(out.lines)
        for k, seg in enumerate(segments):
            if self.held and not isinstance(seg, (HostBlock, DeviceNest)):
                self.release_held()  # only host blocks and the nest come between (targets.triton_order)
            if isinstance(seg, DeviceNest) and seg.name in self.fused:
                continue  # rendered as the epilogue of the matmul before it
            if isinstance(seg, DeviceExtern):
                self.pending.fetch_all()
                nxt = segments[k + 1] if k + 1 < len(segments) else None
                tail = nxt if isinstance(nxt, DeviceNest) and self.fused.get(nxt.name) is seg else None
                self.extern(seg, tail)
            elif isinstance(seg, DeviceNest) and self.mappings[seg.name].shape is Shape.ROWS:
                self.pending.fetch(set(seg.scalars_in) | ir.reduced(seg.reductions))
                row = RowEmitter(self.kernel, seg, self.host)
                text, lines = row.emit()
                self.device_helpers |= row.dev.helpers
                self.kernels.append(text)
                out.lines.extend("    " * out.level + t for t in lines)
                self.known.forget()
                self.notes.append(f"{seg.name}: row program (tl.arange over the row, tl.sum/tl.max reductions)")
            elif isinstance(seg, DeviceSerial) and (loop := self.mappings[seg.name].scan) is not None:
                self.pending.fetch(seg.scalars_in)
                scanner = ScanEmitter(self.kernel, seg, loop, self.host)
                text, lines = scanner.emit()
                self.device_helpers |= scanner.dev.helpers
                self.kernels.append(text)
                out.lines.extend("    " * out.level + t for t in lines)
                self.notes.append(f"{seg.name}: linear recurrence -> parallel scan (three kernels)")
            elif isinstance(seg, HostBlock):
                self.host_stmts(seg.stmts)
            elif isinstance(seg, HostIf):
                self.host_if(seg)
            elif isinstance(seg, (HostLoop, HostWhile)):  # a WHILE's condition is read on the host each time
                head = f"for {py_name(seg.var)} in {self.host_range(seg.start, seg.stop, seg.step)}:" \
                    if isinstance(seg, HostLoop) else f"while {self.host(seg.cond)}:"
                self.pending.fetch_all()
                self.known.forget()
                with out.block(head):
                    self.segs(seg.body)
                    self.pending.fetch_all()
                self.known.forget()
            elif isinstance(seg, (DeviceNest, DeviceSerial)):
                # a nest's reductions come back after its launch (add_kernel); a serial segment's
                # results are copied in too (translate.partition)
                self.pending.fetch(set(seg.scalars_in) | set(seg.scalars_out if isinstance(seg, DeviceSerial) else ()))
                m = self.mappings[seg.name]
                emitter = NestEmitter(self.kernel, m.nest if m.nest is not None else seg, m.split, m.walk, m.queued,
                                      self.schedule.masks_after_walk, self.schedule.shared_subscript_first, m.flat) \
                    if isinstance(seg, DeviceNest) else SerialEmitter(self.kernel, seg)
                text, launch = emitter.emit()
                self.device_helpers |= emitter.dev.helpers
                after = nest_after(segments, k, {n for n, _ in launch.outs}) if isinstance(seg, DeviceSerial) else None
                if after is not None and after.name not in self.fused \
                        and self.mappings[after.name].shape is not Shape.ROWS:
                    self.add_kernel(text, launch, after=after.name)
                else:
                    self.add_kernel(text, launch)
            else:
                raise UnsupportedExpr(seg, f"segment {type(seg).__name__}")
        if self.held:
            self.release_held()
        if len(out.lines) == start:
            out("pass")

    def host_if(self, seg: HostIf) -> None:
        self.pending.fetch(scalar_reads(seg.cond))
        self.joined_if(self.host(seg.cond), lambda: self.segs(seg.then),
                       (lambda: self.segs(seg.orelse)) if seg.orelse else None,
                       (segments_return(seg.then), segments_return(seg.orelse)))

    def joined_if(self, cond: str, then: Callable[[], None], orelse: Callable[[], None] | None,
                  ends: tuple[bool, bool]) -> None:
        joined_if(self.launcher, self.pending, self.known, cond, then, orelse, ends)

    def extern(self, seg: DeviceExtern, tail: DeviceNest | None) -> None:
        out = self.launcher
        op = seg.op
        where = f"{self.kernel.origin.path}:{op.line}" if op.line else str(self.kernel.origin)
        if op.op == "matmul" and self.library_matmul(seg):
            lines = library_matmul_lines(self.kernel, seg, self.host)
            self.notes.append(f"{seg.name}: matmul at {where} -> {MATMUL_LIBRARY_NOTE} (torch.matmul)")
        elif op.op == "matmul":
            mm = MatmulEmitter(self.kernel, seg, self.host, tail)
            text, lines = mm.emit()
            self.device_helpers |= mm.dev.helpers
            self.kernels.append(text)
            fused = f", epilogue {tail.name} fused into its store" if tail is not None else ""
            self.notes.append(f"{seg.name}: matmul at {where} -> generated tiled Triton kernel (tl.dot){fused}")
        elif op.op.startswith("conv"):
            lines = conv_lines(self.kernel, seg, self.host)
            self.notes.append(f"{seg.name}: {op.op} at {where} -> {LIBRARY_NOTE} (torch.nn.functional.{op.op})")
        else:
            raise UnsupportedExpr(op, f"library operation '{op.op}'")
        out.lines.extend("    " * out.level + t for t in lines)

    def host_range(self, start: ir.Expr, stop: ir.Expr, step: ir.Expr) -> str:
        a, b, c = self.host(start), self.host(stop), self.host(step)
        return f"range({a}, {b})" if c == "1" else f"range({a}, {b}, {c})"

    def host_stmts(self, stmts: tuple[ir.Stmt, ...]) -> None:
        for k, s in enumerate(stmts):
            if isinstance(s, ir.Return) and k and isinstance(stmts[k - 1], ir.ErrorCall):
                continue  # the error call already returned
            on_device = select_lines(s, self.pending) if isinstance(s, ir.If) \
                else device_assign(s, self.pending) if isinstance(s, ir.Assign) else None
            if on_device is not None:  # targets.triton_selects: the results stay on the device
                for line in on_device:
                    self.launcher(line)
                self.known.written({t.name for t in assigned((s,))})
                continue
            if self.pending.before(s):
                assert isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)
                self.known.written({s.target.name})  # a copy of a pending tensor
            else:
                self.host_stmt(s)

    def host_stmt(self, s: ir.Stmt) -> None:
        out = self.launcher
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Var):
                value = self.host(s.value)
                dt = self.kernel.param(s.target.name).dtype if self._declared(s.target.name) else s.target.dtype
                if dt.is_float and s.value.dtype.is_int:
                    value = f"float({value})"
                out(f"{py_name(s.target.name)} = {value}")
                self.known.assigned(s.target.name, s.value)
            else:
                off = self.host.offset(s.target.array, s.target.index)
                out(f"{py_name(s.target.array)}[{off}] = {self.host(s.value)}")
        elif isinstance(s, ir.If):
            self.joined_if(self.host(s.cond), lambda: self.host_stmts(s.then),
                           (lambda: self.host_stmts(s.orelse)) if s.orelse else None,
                           (stmts_return(s.then), stmts_return(s.orelse)))
        elif isinstance(s, ir.Loop):
            self.known.forget()
            with out.block(f"for {py_name(s.var)} in {self.host_range(s.start, s.stop, s.step)}:"):
                self.host_stmts(s.body)
            self.known.forget()
        elif isinstance(s, ir.While):
            self.known.forget()
            with out.block(f"while {self.host(s.cond)}:"):
                self.host_stmts(s.body)
            self.known.forget()
        elif isinstance(s, ir.Return):
            out(f"return {self.result_dict()}")
        elif isinstance(s, ir.HostCall):
            where = f"{self.kernel.origin.path}:{s.line or self.kernel.origin.line}"
            for line in python_lines(s, self.host, where):
                out(line)
            if s.kind == "call":
                self.notes.append(f"CALL {s.routine.upper()} at {where} is not made by the Python launcher")
            self.known.written(set(s.writes))
        elif isinstance(s, ir.ErrorCall):
            self.host.helpers.add("_error")
            args = ", ".join([repr(s.routine)] + [self.host(a) for a in s.args])
            out(f"_error({args})")
            out(f"return {self.result_dict()}")
        else:
            raise UnsupportedExpr(s, f"host statement {type(s).__name__}")

    def _declared(self, name: str) -> bool:
        try:
            self.kernel.param(name)
        except KeyError:
            return False
        return True

    # ------------------------------------------------------------ launches

    def release_held(self) -> None:
        """The held serial launch written here (where the nest it waited for did not come)."""
        for line in self.held:
            self.launcher(line)
        self.held = []

    def add_kernel(self, text: str, launch: Launch, after: str | None = None) -> None:
        """The kernel and its launch; a serial kernel's launch held until nest ``after`` is
        launched (``targets.triton_order``)."""
        self.kernels.append(text)
        out = self.launcher
        out(f"# {launch.kernel}" + (f": launched after {after}, which does not need it" if after else ""))
        args = list(launch.args)
        if launch.nest:
            for name, lp in launch.trips:
                out(f"{name} = {self.host_trip(lp)}")
            total = " * ".join(name for name, _ in launch.trips)
            if launch.split is not None:  # targets.splits: enough chunks to fill the GPU
                sname, slp = launch.split
                out(f"{sname} = {self.host_trip(slp)}")
                # a BLOCK-wide program runs on BLOCK / 2 threads (4 warps at 256): twice the chunks of CUDA
                out(f"chunks = max(1, min({2 * FILL_THREADS} // max(1, {total}), {sname} // {MIN_CHUNK}))")
                out(f"chunk = max(1, triton.cdiv({sname}, chunks))")
                args.append(sname)
            on_device = set(self.pending.dtypes)  # starts already in their tensors
            with out.block(f"if {total} > 0:"):
                if launch.tile is not None and len(launch.tile[0]) == 2:  # targets.planes: runs of rows
                    (fast, slow), _, planes = launch.tile
                    out(f"lanes = block * {TRITON.walk_width}  # a program: a strip of lanes walking {planes} rows")
                    out(f"grid = (triton.cdiv({fast}, lanes) * triton.cdiv({slow}, {planes}),)")
                    consts = ["BLOCK=lanes", f"PLANES={planes}"]
                elif launch.tile is not None:  # targets.planes
                    (fast, row, slow), rows, planes = launch.tile
                    out(f"rows = min({rows}, block)  # a program: a (block // rows) x rows tile, {planes} planes")
                    out(f"grid = (triton.cdiv({fast}, block // rows) * triton.cdiv({row}, rows)"
                        f" * triton.cdiv({slow}, {planes}),)")
                    consts = ["BLOCK=block", "ROWS=rows", f"PLANES={planes}"]
                else:
                    lanes = "block"
                    if launch.partials and len(launch.trips) > 1 and launch.split is None:
                        wide = TRITON.wide_reduction
                        out(f"lanes = block * {wide}  # a reduction over several loops: wider programs")
                        lanes = "lanes"
                    elif launch.flat and not launch.partials and launch.split is None:
                        out(f"lanes = block * {TRITON.flat_width}  # elementwise at flat offsets: wider programs")
                        lanes = "lanes"
                    per = lanes if launch.tiles == 1 else f"{lanes} * {launch.tiles}"
                    out(f"grid = (triton.cdiv({total}, {per}),"
                        + (f" max(1, triton.cdiv({launch.split[0]}, chunk)))" if launch.split is not None else ")"))
                    consts = (["CHUNK=chunk"] if launch.split is not None else []) + [f"BLOCK={lanes}"] \
                        + ([f"TILES={launch.tiles}"] if launch.tiles > 1 else [])
                args += self.partial_buffers(launch.partials)
                if (warps := self.schedule.warps or default_warps(launch)) not in (0, TRITON.warps):
                    consts.append(f"num_warps={warps}")
                out(f"{launch.kernel}[grid]({', '.join(args + consts)})")
                held, self.held = self.held, []
                for line in held:
                    out(line)
                if launch.partials:  # reduced and combined on the device (targets.triton_results)
                    device_results(out, launch.partials, self.pending, self.known)
            # no iterations: the serial launch still runs, and each start is its reduction's result
            empty = held + [pushed(n, dt) for r in launch.partials for n, dt in pair_names(r) if n not in on_device]
            if empty:
                with out.block("else:"):
                    for line in empty:
                        out(line)
            return
        for name, dt in launch.outs:
            out(f"{py_name(name)}_out = torch.empty(1, dtype={TORCH_DTYPE[dt]}, device=dev)")
            args.append(f"{py_name(name)}_out")
        line = f"{launch.kernel}[(1,)]({', '.join(args)})"
        if after:
            self.held.append(f"{line}  # {launch.kernel}, held past {after}")
        else:
            out(line)
        for name, dt in launch.outs:
            self.pending.add(name, dt)  # brought to the host where it is first read
        self.known.written({name for name, _ in launch.outs})

    def partial_buffers(self, partials: list[ir.Reduction]) -> list[str]:
        """The partials' arrays, one element per program: a reduction alone in its dtype gets
        its own; those sharing a dtype get the rows of one array (one allocation and one kernel
        argument, and :meth:`combine_partials` reduces them in one call). Returns the kernel
        arguments."""
        out, groups = self.launcher, by_dtype([r for r in partials if not r.loc])
        for r in partials:
            if r.loc:
                out(f"{py_name(r.var)}_part = torch.empty((2, grid[0]), dtype={_pair_dtype(r)}, device=dev)"
                    f"  # a pair per program: values, then first iterations")
        for dtype, group in groups.items():
            if len(group) == 1:
                out(f"{py_name(group[0].var)}_part = torch.empty(grid[0], dtype={TORCH_DTYPE[dtype]}, device=dev)")
            else:
                names = ", ".join(py_name(r.var) for r in group)
                out(f"{partials_name(dtype, groups)} = torch.empty(({len(group)}, grid[0]), "
                    f"dtype={TORCH_DTYPE[dtype]}, device=dev)  # a row per reduction: {names}")
        return partial_arrays(partials)

    def host_trip(self, lp: ir.Loop) -> str:
        start, stop, step = self.host(lp.start), self.host(lp.stop), self.host(lp.step)
        if step == "1":
            return f"max(0, {stop})" if start == "0" else f"max(0, {stop} - {start})"
        self.host.helpers.add("_trip")
        return f"_trip({start}, {stop}, {step})"

