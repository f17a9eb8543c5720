"""Serial device code of the Triton target: a ``DeviceSerial`` segment as one
``@triton.jit`` program run by a single instance, with scalar loads and stores and
real ``for``/``if``; its scalar results are stored to one-element output arrays."""

from __future__ import annotations

from targets.triton_expr import UnsupportedExpr, dev_dtype, fold, py_name
from targets.triton_kernels import Launch, Lines, _Emitter
from translate import ir
from translate.partition import DeviceSerial


class SerialEmitter(_Emitter):
    """A ``DeviceSerial`` as a single program: scalar code, real control flow."""

    def __init__(self, kernel: ir.Kernel, seg: DeviceSerial) -> None:
        super().__init__(kernel)
        self.seg = seg

    def emit(self) -> tuple[str, Launch]:
        seg = self.seg
        self.add_arrays(seg.arrays)
        self.add_scalars(seg.scalars_in + seg.scalars_out)
        outs = []
        for name in seg.scalars_out:
            dt = self.var_dtype(name)
            if dt is ir.DType.CHAR:
                raise UnsupportedExpr(self.decl(name), f"character scalar {name} written on the device")
            outs.append((name, dt))
        extra = [f"{py_name(n)}_out" for n, _ in outs]
        body = Lines()
        body.level = 1
        self.out = body
        args = set(seg.scalars_in) | set(seg.scalars_out)
        written: list[str] = []
        for s in seg.stmts:
            for n in ir.walk(s):
                if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var) and n.target.name not in args \
                        and n.target.name not in written:
                    written.append(n.target.name)
        for name in written:  # declared once with their type: Triton's for/if need it
            body(f"{py_name(name)} = tl.zeros([], {dev_dtype(self.var_dtype(name))})")
        for s in seg.stmts:
            self.stmt(s)
        for name, _ in outs:
            body(f"tl.store({py_name(name)}_out, {py_name(name)})")
        head = Lines()
        head("@triton.jit")
        head(f"def {seg.name}({', '.join(self.params + extra)}):")
        head.level = 1
        origin = f"{self.kernel.origin.path}:{seg.line}" if seg.line else str(self.kernel.origin)
        head(f'"""Serial device code at {origin}: one program runs it in order."""')
        for p in self.prologue:
            head(p)
        launch = Launch(seg.name, self.launch_args, outs=outs, nest=False)
        return head.text() + body.text(), launch

    def stmt(self, s: ir.Stmt) -> None:
        self.check_no_exit(s)
        body = self.out
        if isinstance(s, ir.HostCall):  # output or a call in device code: not kept (check_no_exit let no STOP by)
            what = f"output ({s.routine})" if s.kind == "print" else f"CALL {s.routine.upper()}"
            body(f"pass  # {what} at line {s.line}: not made from a Triton kernel")
            return
        if isinstance(s, ir.Assign):
            if isinstance(s.target, ir.Var):
                dt = self.var_dtype(s.target.name)
                body(f"{py_name(s.target.name)} = {self.value(s.value, dt)}")
            else:
                decl = self.kernel.param(s.target.array)
                off = self.dev.offset(s.target.array, s.target.index)
                body(f"tl.store({py_name(s.target.array)} + {off}, {self.value(s.value, decl.dtype)})")
        elif isinstance(s, ir.If):
            with body.block(f"if {self.dev.typed(s.cond, ir.DType.BOOL)}:"):
                for t in s.then:
                    self.stmt(t)
            if s.orelse:
                with body.block("else:"):
                    for t in s.orelse:
                        self.stmt(t)
        elif isinstance(s, ir.While):
            with body.block(f"while {self.dev.typed(s.cond, ir.DType.BOOL)}:"):
                for t in s.body:
                    self.stmt(t)
        elif isinstance(s, ir.Loop):
            var = py_name(s.var)
            step = fold(s.step)
            if step == ir.Const(1, step.dtype):
                hdr = f"for {var} in range({self.dev.typed(s.start, ir.DType.I64)}, " \
                      f"{self.dev.typed(s.stop, ir.DType.I64)}):"
                with body.block(hdr):
                    for t in s.body:
                        self.stmt(t)
                return
            trip, index = self.trip_text(s)
            with body.block(f"for {var}_k in range(0, {trip}):"):
                body(f"{var} = {index.format(k=var + '_k')}")
                for t in s.body:
                    self.stmt(t)
        else:
            raise UnsupportedExpr(s, f"statement {type(s).__name__} in serial device code")
