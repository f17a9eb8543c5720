"""Whether a routine's only effect is output (a debug report such as NPB MG's ``rep_nrm``).

A call to such a routine may be left out of a translation that could not make it (it is passed
arrays that live on the device) without changing any result: it assigns only its own locals,
calls only routines that assign only what it passes them of its locals (or that are output
only themselves), and neither reads input, stops the program, nor allocates. The routine need
not be lowerable itself (a CHARACTER title argument is fine).
"""

from __future__ import annotations

from collections.abc import Callable

from fparser.two import Fortran2003 as F
from fparser.two import Fortran2008 as F2008
from fparser.two.utils import walk

from parsers.fortran_scope import Scope
from translate import ir

_EFFECTS = (F.Read_Stmt, F.Stop_Stmt, F2008.Error_Stop_Stmt, F.Allocate_Stmt, F.Deallocate_Stmt, F.Open_Stmt,
            F.Close_Stmt, F.Pointer_Assignment_Stmt, F.Nullify_Stmt, F.Entry_Stmt)


def output_only(node: object, scope: Scope, resolve: Callable[[str], ir.Kernel | ir.Opaque | None],
                is_output_only: Callable[[str], bool]) -> bool:
    """``node``: the routine's fparser unit; ``scope``: its declarations; ``resolve``: lowered
    callees; ``is_output_only``: the same question for a callee."""
    head = node.content[0] if getattr(node, "content", None) else None  # type: ignore[attr-defined]
    dummies = {str(n).lower() for n in walk(head, F.Name)} if head is not None else set()
    if isinstance(head, F.Function_Stmt):
        return False  # a function's result is its effect

    def local(name: str) -> bool:
        sym = scope.lookup(name)
        return name not in dummies and (sym is None or (sym.binding is None and sym.saved is None))

    body = next((c for c in node.content if isinstance(c, F.Execution_Part)), None)  # type: ignore[attr-defined]
    if body is None:
        return True
    if any(True for _ in walk(body, _EFFECTS)):
        return False
    for a in walk(body, F.Assignment_Stmt):
        target = a.items[0]
        base = target if isinstance(target, F.Name) else target.items[0] if isinstance(target, F.Part_Ref) else None
        if base is None or not local(str(base).lower()):
            return False
    for c in walk(body, F.Call_Stmt):
        name = str(c.items[0]).lower()
        if is_output_only(name):
            continue
        callee = resolve(name)
        if not isinstance(callee, ir.Kernel):
            return False
        if any(p.binding is not None and p.intent.writes for p in callee.params):
            return False
        dummies_of = [p for p in callee.params if p.binding is None]
        args = list(c.items[1].items) if c.items[1] is not None else []
        for p, arg in zip(dummies_of, args, strict=False):
            if not p.intent.writes:
                continue
            base = arg if isinstance(arg, F.Name) else arg.items[0] if isinstance(arg, F.Part_Ref) else None
            if base is None or not local(str(base).lower()):
                return False
    return True
