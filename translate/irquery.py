"""Questions about IR that the partition, the sinking rules and the targets ask:
which scalars a node reads or writes, which arrays it touches or stores to,
whether it holds device work or a host exit, and which extents a touched
multi-dimensional array's linearisation needs."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from translate import ir


def scalar_reads(node: object) -> set[str]:
    """Names of every ``Var`` read in ``node`` (assignment targets that are
    plain variables are not reads; the indices of stored-to elements are)."""
    out: set[str] = set()
    _reads(node, out)
    return out


def _reads(node: object, out: set[str]) -> None:
    if isinstance(node, ir.Var):
        out.add(node.name)
    elif isinstance(node, ir.Assign):
        if isinstance(node.target, ir.Load):
            for i in node.target.index:
                _reads(i, out)
        _reads(node.value, out)
    else:
        for child in ir.children(node):
            _reads(child, out)


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, else ``base2``, ``base3``, ...: the first not in ``taken``."""
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def scalar_writes(node: object) -> set[str]:
    """Scalars assigned in ``node`` (not loop variables), host calls' written arguments included."""
    out: set[str] = set()
    for n in ir.walk(node):
        if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var):
            out.add(n.target.name)
        elif isinstance(n, ir.HostCall):
            out.update(n.writes)
    return out


def loop_vars(node: object) -> set[str]:
    return {n.var for n in ir.walk(node) if isinstance(n, ir.Loop)}


def arrays_touched(node: object) -> set[str]:
    out = set()
    for n in ir.walk(node):
        if isinstance(n, ir.Load):
            out.add(n.array)
        elif isinstance(n, ir.Extern):
            out |= set(n.inputs) | set(n.outputs)
    return out


def arrays_written(node: object) -> set[str]:
    """The arrays ``node`` (a statement, or a tuple or list of them) stores to or a call outputs."""
    if isinstance(node, (tuple, list)):
        return set().union(*(arrays_written(s) for s in node))
    out = set()
    for n in ir.walk(node):
        if isinstance(n, ir.Assign) and isinstance(n.target, ir.Load):
            out.add(n.target.array)
        elif isinstance(n, ir.Extern):
            out |= set(n.outputs)
    return out


def has_parallel(node: object) -> bool:
    """Whether ``node`` holds device work the host launches: a parallel loop or a
    library operation (``ir.Extern``)."""
    return any((isinstance(n, ir.Loop) and n.kind is ir.LoopKind.PARALLEL) or isinstance(n, ir.Extern)
               for n in ir.walk(node))


def has_exit(node: object) -> bool:
    """True when ``node`` contains a ``Return``, an ``ErrorCall`` or a STOP (host-only). Output
    may run on the device; a call left to the program (a timer) is not made from device code."""
    return any(isinstance(n, (ir.Return, ir.ErrorCall)) or (isinstance(n, ir.HostCall) and n.kind == "stop")
               for n in ir.walk(node))


def header_arrays(loop: ir.Loop) -> set[str]:
    """Arrays the loop's bounds or step read."""
    return arrays_touched(loop.start) | arrays_touched(loop.stop) | arrays_touched(loop.step)


def many(stmts: Iterable[object], query: Callable[[object], set[str]]) -> set[str]:
    """The union of ``query`` over ``stmts``."""
    out: set[str] = set()
    for s in stmts:
        out |= query(s)
    return out


def first_line(stmts: Iterable[object]) -> int:
    for s in stmts:
        for n in ir.walk(s):
            if isinstance(n, ir.Loop) and n.line:
                return n.line
    return 0


def count_refs(node: object, name: str) -> int:
    """Uses of ``name`` as a variable or a loop variable in ``node``."""
    return sum(
        1 for n in ir.walk(node)
        if (isinstance(n, ir.Var) and n.name == name) or (isinstance(n, ir.Loop) and n.var == name)
    )


def stride_scalars(kernel: ir.Kernel, arrays: Iterable[str]) -> set[str]:
    """Scalars the linearisation of ``arrays`` needs: the extents of every
    dimension but the slowest one (the last for LEFT, the first for RIGHT)."""
    out: set[str] = set()
    for name in arrays:
        try:
            decl = kernel.param(name)
        except KeyError:
            continue
        if not isinstance(decl, ir.Array) or decl.rank < 2:
            continue
        dims = decl.shape[:-1] if decl.layout is ir.Layout.LEFT else decl.shape[1:]
        for d in dims:
            out |= scalar_reads(d)
    return out


def first_best_condition(value: ir.Expr, best: ir.Var, better: str, nan: bool) -> ir.Expr:
    """When a first-max (``better`` "gt") or first-min ("lt") scan takes ``value`` over
    ``best``; with ``nan`` (float values) the first NaN is taken and then kept, like
    torch. The PyTorch frontend emits it; the Triton row programs recognise it."""
    take: ir.Expr = ir.BinOp(better, value, best, ir.DType.BOOL)
    if not nan:
        return take
    isnan_v = ir.BinOp("ne", value, value, ir.DType.BOOL)
    isnan_b = ir.BinOp("ne", best, best, ir.DType.BOOL)
    return ir.BinOp("and", ir.UnOp("not", isnan_b, ir.DType.BOOL),
                    ir.BinOp("or", take, isnan_v, ir.DType.BOOL), ir.DType.BOOL)
