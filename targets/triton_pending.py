"""Scalars a Triton launcher has computed on the device but not yet brought to the host.

A serial device segment's results (``DMAX = DABS(DX(1))``) and a nest's reductions
(``targets.triton_results``) would come back with ``.item()``, which waits for the GPU. Waited for
at once, the GPU idles while the host wakes up and launches the next kernel; so a result stays in
its tensor (``NAME_out``) until host code first reads it, and a plain copy of it
(``DMAX_BEST = DMAX``) copies the tensor, not the value. A host assignment that overwrites a
pending scalar without reading it drops it. Host IFs and assignments that compute from pending
scalars become device operations where they can (``targets.triton_selects``). What is still
pending when the launcher returns is returned as a 0-d tensor: the caller's first read waits.
Each name is pending or not at each line whichever way the code ran: the branches of an IF start
from what was pending before it, and where they join, a name pending on one path is put in its
tensor on the others (``targets.triton_results.pushed``); before a loop every pending scalar
comes back, as it does at the end of its body."""

from __future__ import annotations

from collections.abc import Iterable

from targets.triton_expr import py_name
from targets.triton_kernels import Lines
from translate import ir
from translate.irquery import scalar_reads, scalar_writes


def fetch_line(name: str, dtype: ir.DType) -> str:
    """The line that brings the scalar ``name`` of type ``dtype`` from its tensor to the host."""
    conv = "bool" if dtype is ir.DType.BOOL else ("float" if dtype.is_float else "int")
    return f"{py_name(name)} = {conv}({py_name(name)}_out.item())"


class PendingScalars:
    def __init__(self, out: Lines) -> None:
        self.out = out
        self.dtypes: dict[str, ir.DType] = {}  # pending name -> its type, in the order they became pending

    def add(self, name: str, dtype: ir.DType) -> None:
        self.dtypes.pop(name, None)
        self.dtypes[name] = dtype

    def fetch(self, names: Iterable[str]) -> None:
        """Bring these pending scalars to the host (a wait for the GPU each); they are no longer pending."""
        for name, dt in self.take(names):
            self.out(fetch_line(name, dt))

    def take(self, names: Iterable[str]) -> list[tuple[str, ir.DType]]:
        """These pending scalars (name and type), no longer pending: the caller brings them back."""
        wanted = set(names)
        return [(name, self.dtypes.pop(name)) for name in [n for n in self.dtypes if n in wanted]]

    def fetch_all(self) -> None:
        self.fetch(list(self.dtypes))

    def snapshot(self) -> dict[str, ir.DType]:
        return dict(self.dtypes)

    def restore(self, state: dict[str, ir.DType]) -> None:
        self.dtypes = dict(state)

    def returned(self, name: str) -> str:
        """The value the launcher returns for ``name``: the host's, or the 0-d view of its pending tensor."""
        return f"{py_name(name)}_out.view(())" if name in self.dtypes else py_name(name)

    def before(self, s: ir.Stmt) -> bool:
        """Ready the host for statement ``s``: True when ``s`` is a copy of a pending scalar, now
        written as a copy of its tensor (the caller renders nothing more); else the pending
        scalars ``s`` reads or writes come back, except one it overwrites without reading, which
        is dropped (a return reads nothing: :meth:`returned`)."""
        if (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and isinstance(s.value, ir.Var)
                and s.value.name in self.dtypes and s.value.dtype == s.target.dtype):
            self.out(f"{py_name(s.target.name)}_out = {py_name(s.value.name)}_out")
            self.add(s.target.name, self.dtypes[s.value.name])
            return True
        if (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.name in self.dtypes
                and s.target.name not in scalar_reads(s.value)):
            self.dtypes.pop(s.target.name)
            self.fetch(scalar_reads(s))
            return False
        if isinstance(s, ir.If):  # its statements are readied one by one, where they run
            self.fetch(scalar_reads(s.cond))
            return False
        loop_vars = {n.var for n in ir.walk(s) if isinstance(n, ir.Loop)}
        self.fetch(scalar_reads(s) | scalar_writes(s) | loop_vars)
        return False
