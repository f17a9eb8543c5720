"""Symbol tables of the Fortran frontend: declarations, kinds, PARAMETERs,
COMMON blocks, implicit typing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fparser.two import Fortran2003 as F
from fparser.two.utils import walk

from parsers.base import Unsupported
from translate import ir
from translate.ir import DType, Expr, Intent
from translate.simplify import simplify

if TYPE_CHECKING:
    from parsers.fortran_expr import ExprLowerer


@dataclass
class Sym:
    """One named entity of a routine (mutable while the routine is lowered)."""

    name: str
    dtype: DType | None = None
    dims: list[tuple[Expr, Expr | None]] | None = None  # (lower, upper); upper None = assumed size
    const: ir.Const | None = None  # PARAMETER value
    intent: Intent | None = None
    binding: str | None = None  # "common:/blk/" or "module:name"
    is_arg: bool = False
    external: bool = False
    char_len: int | None = 1
    saved: str | None = None  # an initialised local (implicit SAVE), constant while never assigned: where
    # assumed-shape (``x(:)``, ``x(-1:)``) or deferred-shape (ALLOCATABLE) array: its extents come
    # from the actual array (or the ALLOCATE that made it), its upper bounds in ``dims`` are None
    deferred: bool = False
    allocatable: bool = False
    private: bool = False  # a PRIVATE module variable: nothing outside its module can set it
    init: object | None = None  # a module variable's initial value (fparser node), until known constant
    complex: bool = False  # COMPLEX: ``dtype`` is the type of its parts (parsers/fortran_complex.py)


@dataclass(frozen=True)
class Defaults:
    """The types of REAL, DOUBLE PRECISION and INTEGER without a kind, and of real literals
    without one: gfortran's, or as ``-fdefault-real-8`` / ``-fdefault-double-8`` /
    ``-fdefault-integer-8`` make them."""

    real: DType = DType.F32
    double: DType | None = DType.F64  # None: REAL(16), which is not lowered
    integer: DType = DType.I32

    @staticmethod
    def from_flags(flags: tuple[str, ...] | list[str]) -> Defaults:
        real8 = "-fdefault-real-8" in flags
        double = DType.F64 if not real8 or "-fdefault-double-8" in flags else None
        return Defaults(DType.F64 if real8 else DType.F32, double,
                        DType.I64 if "-fdefault-integer-8" in flags else DType.I32)


@dataclass(frozen=True)
class UseAssoc:
    """One USE statement: the module's scope, and what it makes visible here (``only``:
    local name -> the module's name, None for everything; ``renames``: local -> module)."""

    scope: Scope
    only: dict[str, str] | None = None
    renames: dict[str, str] = field(default_factory=dict)

    def lookup(self, name: str) -> Sym | None:
        if self.only is not None:
            return self.scope.lookup(self.only[name]) if name in self.only else None
        if name in self.renames:
            return self.scope.lookup(self.renames[name])
        if name in self.renames.values():
            return None  # renamed away: only the local name sees it
        return self.scope.lookup(name)


@dataclass
class Scope:
    """What one routine (or a module's or main program's specification part) declares."""

    path: str
    syms: dict[str, Sym] = field(default_factory=dict)
    implicit: dict[str, DType | None] = field(default_factory=dict)  # letter -> type; empty = default rules
    implicit_none: bool = False
    parent: Scope | None = None  # the module or main program a procedure is contained in
    used: list[UseAssoc] = field(default_factory=list)
    module_name: str | None = None
    commons: dict[str, list[str]] = field(default_factory=dict)  # block -> members in storage order
    # modules USEd here (or by the host) that are not in the workflow's sources: an undeclared
    # name may come from one of them, so it is never given an implicit type
    unknown_uses: list[str] = field(default_factory=list)
    # names whose declaration could not be lowered -> why; using one makes the user unsupported
    broken: dict[str, str] = field(default_factory=dict)
    defaults: Defaults = field(default_factory=Defaults)

    def lookup(self, name: str) -> Sym | None:
        if name in self.syms:
            return self.syms[name]
        if name in self.broken:
            raise Unsupported(self.broken[name])
        for use in self.used:
            s = use.lookup(name)
            if s is not None:
                return s
        return self.parent.lookup(name) if self.parent is not None else None

    def get(self, name: str) -> Sym:
        s = self.syms.get(name)
        if s is None:
            s = Sym(name)
            self.syms[name] = s
        return s

    def type_of(self, name: str) -> DType:
        s = self.lookup(name)
        if s is not None and s.dtype is not None:
            return s.dtype
        return self.implicit_type(name)

    def unknown_modules(self) -> list[str]:
        found = list(self.unknown_uses)
        for use in self.used:
            found += [m for m in use.scope.unknown_modules() if m not in found]
        if self.parent is not None:
            found += [m for m in self.parent.unknown_modules() if m not in found]
        return found

    def implicit_type(self, name: str) -> DType:
        unknown = self.unknown_modules()
        if unknown:
            raise Unsupported(f"'{name}' is not declared in {self.path}; it may come from module"
                              f" {', '.join(unknown)}, which is not in the workflow's sources")
        letter = name[0]
        if letter in self.implicit:
            t = self.implicit[letter]
            if t is None:
                raise Unsupported(f"'{name}' has no type (IMPLICIT NONE) in {self.path}")
            return t
        if self.implicit_none or (self.parent is not None and self.parent.implicit_none and not self.implicit):
            raise Unsupported(f"'{name}' has no type (IMPLICIT NONE) in {self.path}")
        return self.defaults.integer if "i" <= letter <= "n" else self.defaults.real


_REAL_BY_KIND = {4: DType.F32, 8: DType.F64}
_INT_BY_KIND = {4: DType.I32, 8: DType.I64, 2: DType.I32, 1: DType.I32}


def _kind_value(node: object, ex: ExprLowerer) -> int:
    """The integer value of a kind selector (``*8``, ``(8)``, ``(KIND=dp)``)."""
    items = [i for i in getattr(node, "items", ()) if i not in ("(", ")", "*", None)]
    if not items:
        raise Unsupported(f"kind selector {node} in {ex.where()}")
    e = ex.kind_expr(items[-1])
    return e


def type_spec(node: object, ex: ExprLowerer) -> tuple[DType, int | None]:
    """The IR dtype (and character length) of an Intrinsic_Type_Spec."""
    if not isinstance(node, F.Intrinsic_Type_Spec):
        raise Unsupported(f"derived type declaration '{node}' at {ex.where()} cannot be lowered")
    name = str(node.items[0]).upper()
    sel = node.items[1] if len(node.items) > 1 else None
    if name == "DOUBLE PRECISION":
        if ex.scope.defaults.double is None:
            raise Unsupported(f"DOUBLE PRECISION at {ex.where()} is REAL(16) under -fdefault-real-8 (add"
                              " -fdefault-double-8)")
        return ex.scope.defaults.double, None
    if name == "CHARACTER":
        length: int | None = 1
        if sel is not None:
            if any(isinstance(n, F.Type_Param_Value) and str(n) == "*" for n in walk(sel)) or "*)" in str(sel):
                length = None
            else:
                lits = [n for n in walk(sel) if isinstance(n, (F.Int_Literal_Constant, F.Name))]
                length = ex.kind_expr(lits[-1]) if lits else 1
        return DType.CHAR, length
    kind = _kind_value(sel, ex) if sel is not None else None
    if name == "REAL":
        if kind is None:
            return ex.scope.defaults.real, None
        if kind not in _REAL_BY_KIND:
            raise Unsupported(f"REAL kind {kind} at {ex.where()} is not supported")
        return _REAL_BY_KIND[kind], None
    if name == "INTEGER":
        return (_INT_BY_KIND.get(kind, DType.I32) if kind is not None else ex.scope.defaults.integer), None
    if name == "LOGICAL":
        return DType.BOOL, None
    raise Unsupported(f"{name} type at {ex.where()} cannot be lowered")


def array_spec(node: object, ex: ExprLowerer) -> list[tuple[Expr, Expr | None]]:
    """Dimensions of an array spec: explicit shape, assumed size."""
    dims: list[tuple[Expr, Expr | None]] = []
    one = ir.Const(1, DType.I32)
    if isinstance(node, F.Assumed_Size_Spec):
        specs, last = node.items
        for s in (specs.items if specs is not None else ()):
            dims.append(_explicit(s, ex))
        lo = ex.spec_expr(last) if last is not None else one
        dims.append((lo, None))
        return dims
    if isinstance(node, F.Explicit_Shape_Spec_List):
        return [_explicit(s, ex) for s in node.items]
    if isinstance(node, F.Explicit_Shape_Spec):
        return [_explicit(node, ex)]
    if isinstance(node, (F.Assumed_Shape_Spec_List, F.Deferred_Shape_Spec_List)):
        return [(ex.spec_expr(s.items[0]) if getattr(s, "items", None) and s.items[0] is not None else one, None)
                for s in node.items]
    raise Unsupported(f"array specification '{node}' at {ex.where()} cannot be lowered")


def is_deferred(node: object) -> bool:
    """An assumed-shape or deferred-shape array spec (every dimension ``:`` or ``lower:``)."""
    return isinstance(node, (F.Assumed_Shape_Spec_List, F.Deferred_Shape_Spec_List))


def _explicit(s: object, ex: ExprLowerer) -> tuple[Expr, Expr | None]:
    if isinstance(s, F.Explicit_Shape_Spec):
        lo, hi = s.items
        return (ex.spec_expr(lo) if lo is not None else ir.Const(1, DType.I32)), ex.spec_expr(hi)
    if isinstance(s, F.Assumed_Size_Spec):
        raise Unsupported(f"assumed-size spec in the middle of '{s}' at {ex.where()}")
    return ir.Const(1, DType.I32), ex.spec_expr(s)


def declare(stmt: object, scope: Scope, ex: ExprLowerer, module: bool = False) -> None:
    """Record one specification statement in ``scope`` (``module``: a module's
    specification part, where initialised variables are module variables)."""
    if isinstance(stmt, F.Implicit_Part):
        for s in stmt.children:
            declare(s, scope, ex, module)
    elif isinstance(stmt, F.Implicit_Stmt):
        _implicit(stmt, scope, ex)
    elif isinstance(stmt, F.Type_Declaration_Stmt):
        _type_decl(stmt, scope, ex, module)
    elif isinstance(stmt, F.Dimension_Stmt):
        for name, spec in stmt.items[0] if isinstance(stmt.items[0], list) else stmt.items:
            sym = scope.get(str(name).lower())
            sym.dims, sym.deferred = array_spec(spec, ex), is_deferred(spec)
    elif isinstance(stmt, F.Allocatable_Stmt):
        for n in walk(stmt, F.Name):
            scope.get(str(n).lower()).allocatable = True
    elif isinstance(stmt, F.Parameter_Stmt):
        for d in walk(stmt, F.Named_Constant_Def):
            name, value = d.items
            _set_param(scope.get(str(name).lower()), value, scope, ex)
    elif isinstance(stmt, F.Common_Stmt):
        for block, objs in stmt.items[0]:
            bname = str(block).lower() if block is not None else ""
            for obj in objs.items:
                if isinstance(obj, F.Common_Block_Object):
                    name, spec = obj.items
                    sym = scope.get(str(name).lower())
                    if spec is not None:
                        sym.dims = array_spec(spec, ex)
                else:
                    sym = scope.get(str(obj).lower())
                sym.binding = f"common:/{bname}/"
                scope.commons.setdefault(bname, []).append(sym.name)
    elif isinstance(stmt, F.External_Stmt):
        for n in walk(stmt, F.Name):
            scope.get(str(n).lower()).external = True
    elif isinstance(stmt, F.Interface_Block):
        # explicit interfaces of procedures: calls to them resolve like any call; a generic
        # interface (a name standing for several procedures) is not followed
        if str(stmt.children[0]).strip().upper() != "INTERFACE":
            raise Unsupported(f"generic {str(stmt.children[0]).strip()} at {ex.where(stmt)} cannot be lowered")
    elif isinstance(stmt, (F.Comment, F.Intrinsic_Stmt, F.Save_Stmt, F.Use_Stmt, F.Format_Stmt)):
        return
    elif isinstance(stmt, F.Data_Stmt) and not module:
        _data(stmt, scope, ex)
    else:
        raise Unsupported(f"{construct_name(stmt)} at {ex.where(stmt)} cannot be lowered")


def predeclare_types(stmts: list[object], scope: Scope, ex: ExprLowerer) -> None:
    """Give the names of type declarations their types before any declaration is read: an
    array may be dimensioned by an argument declared after it (``real :: a(n, n)`` then
    ``integer :: n``, which compilers accept). Whatever cannot be typed yet is left to the
    declaration itself."""
    for stmt in stmts:
        if not isinstance(stmt, F.Type_Declaration_Stmt):
            continue
        try:
            dtype, _ = type_spec(stmt.items[0], ex)
        except Unsupported:
            continue
        for ent in stmt.items[2].items:
            sym = scope.get(str(ent.items[0]).lower())
            if sym.dtype is None:
                sym.dtype = dtype


def _implicit(stmt: F.Implicit_Stmt, scope: Scope, ex: ExprLowerer) -> None:
    if str(stmt.items[0]).upper() == "NONE":
        scope.implicit_none = True
        return
    for spec in walk(stmt, F.Implicit_Spec):
        dtype, _ = type_spec(spec.items[0], ex)
        for letters in walk(spec.items[1], F.Letter_Spec):
            a, b = str(letters.items[0]).lower(), str(letters.items[1] or letters.items[0]).lower()
            for code in range(ord(a), ord(b) + 1):
                scope.implicit[chr(code)] = dtype


def complex_parts(node: object, ex: ExprLowerer) -> DType | None:
    """The type of the parts of a COMPLEX type spec (DOUBLE COMPLEX, COMPLEX*16, COMPLEX(8),
    COMPLEX(KIND=...), default COMPLEX), None for another type."""
    if not isinstance(node, F.Intrinsic_Type_Spec):
        return None
    name = str(node.items[0]).upper()
    if name == "DOUBLE COMPLEX":
        return DType.F64
    if name != "COMPLEX":
        return None
    sel = node.items[1] if len(node.items) > 1 else None
    if sel is None:
        return ex.scope.defaults.real
    text = str(sel).replace(" ", "")
    kind = _kind_value(sel, ex)
    if text.startswith("*"):  # COMPLEX*16: the bytes of both parts
        kind = kind // 2 if kind is not None else None
    if kind not in _REAL_BY_KIND:
        raise Unsupported(f"COMPLEX kind {kind} at {ex.where()} is not supported")
    return _REAL_BY_KIND[kind]


def _type_decl(stmt: F.Type_Declaration_Stmt, scope: Scope, ex: ExprLowerer, module: bool) -> None:
    tspec, attrs, entities = stmt.items
    parts = complex_parts(tspec, ex)
    dtype, clen = (parts, None) if parts is not None else type_spec(tspec, ex)
    is_param, intent, dims, deferred, allocatable, private = False, None, None, False, False, False
    for attr in (attrs.items if attrs is not None else ()):
        text = str(attr).upper()
        if isinstance(attr, F.Intent_Attr_Spec):
            intent = Intent(str(attr.items[1]).lower().replace(" ", ""))
        elif isinstance(attr, F.Dimension_Attr_Spec):
            dims, deferred = array_spec(attr.items[1], ex), is_deferred(attr.items[1])
        elif text == "PARAMETER":
            is_param = True
        elif text == "ALLOCATABLE":
            allocatable = True
        elif text == "PRIVATE":
            private = True
        elif text.startswith("POINTER"):
            raise Unsupported(f"{text} variable at {ex.where(stmt)} cannot be lowered")
        elif text in ("SAVE", "EXTERNAL", "INTRINSIC", "OPTIONAL", "CONTIGUOUS", "VALUE"):
            if text == "OPTIONAL":
                raise Unsupported(f"OPTIONAL argument at {ex.where(stmt)} cannot be lowered")
    for ent in entities.items:
        name, spec, length, init = ent.items
        sym = scope.get(str(name).lower())
        sym.dtype = dtype
        sym.complex = parts is not None
        if sym.complex and init is not None:
            raise Unsupported(f"initialised COMPLEX {sym.name} at {ex.where(stmt)} cannot be lowered")
        sym.char_len = clen
        if length is not None and dtype == DType.CHAR:
            lits = list(walk(length, F.Int_Literal_Constant))
            sym.char_len = None if "*" in str(length) or not lits else ex.kind_expr(lits[0])
        if intent is not None:
            sym.intent = intent
        if spec is not None:
            sym.dims, sym.deferred = array_spec(spec, ex), is_deferred(spec)
        elif dims is not None:
            sym.dims, sym.deferred = dims, deferred
        sym.allocatable = sym.allocatable or allocatable
        sym.private = sym.private or private
        if is_param and init is not None:
            _set_param(sym, init.items[1], scope, ex)
        elif init is not None and module and sym.dims is None:
            sym.init = init.items[1]
        elif init is not None and not module:
            if sym.dims is not None:
                raise Unsupported(f"initialised array '{sym.name}' (implicit SAVE) at {ex.where(stmt)}"
                                  " cannot be lowered")
            # a constant while nothing assigns it (an assignment makes the routine unsupported:
            # the value would persist between calls)
            _set_param(sym, init.items[1], scope, ex)
            sym.saved = ex.where(stmt)


def _data(stmt: object, scope: Scope, ex: ExprLowerer) -> None:
    """DATA giving local scalars their first value: like an initialised declaration, a
    constant while nothing assigns it. Arrays, repeat counts and strings are not taken."""
    for dset in walk(stmt, F.Data_Stmt_Set):
        objects, values = (list(getattr(x, "items", ())) for x in dset.items)
        if len(objects) != len(values) or not all(isinstance(o, F.Name) for o in objects):
            raise Unsupported(f"DATA statement at {ex.where(stmt)} (arrays, implied-DO or repeat counts) cannot be"
                              " lowered")
        for obj, value in zip(objects, values, strict=True):
            sym = scope.get(str(obj).lower())
            if sym.dims is not None or sym.is_arg or sym.binding is not None or sym.dtype == DType.CHAR:
                raise Unsupported(f"DATA statement at {ex.where(stmt)} giving '{sym.name}' (an array, argument,"
                                  " global or string) cannot be lowered")
            _set_param(sym, value, scope, ex)
            sym.saved = ex.where(stmt)


def set_constant(sym: Sym, value: object, scope: Scope, ex: ExprLowerer) -> None:
    """An initialised variable that nothing assigns: a constant."""
    _set_param(sym, value, scope, ex)


def _set_param(sym: Sym, value: object, scope: Scope, ex: ExprLowerer) -> None:

    dtype = sym.dtype or scope.implicit_type(sym.name)
    if isinstance(value, F.Intrinsic_Function_Reference) and str(value.items[0]).lower() in (
            "kind", "selected_real_kind", "selected_int_kind"):
        sym.const, sym.dtype = ir.Const(ex.kind_expr(value), dtype), dtype
        return
    e = simplify(ex.expr(value))
    if not isinstance(e, ir.Const):
        try:
            v = ir.evaluate(e, {})
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise Unsupported(f"PARAMETER {sym.name} = {value} at {ex.where()} is not a constant") from err
        e = ir.Const(v, e.dtype)
    if dtype.is_float:
        sym.const = ir.Const(float(e.value), dtype)  # type: ignore[arg-type]
    elif dtype.is_int:
        sym.const = ir.Const(int(e.value), dtype)  # type: ignore[arg-type]
    else:
        sym.const = ir.Const(e.value, dtype)
    sym.dtype = dtype


_FRIENDLY = {
    "Goto_Stmt": "GO TO", "Computed_Goto_Stmt": "computed GO TO", "Assigned_Goto_Stmt": "assigned GO TO",
    "Arithmetic_If_Stmt": "arithmetic IF", "Print_Stmt": "PRINT", "Write_Stmt": "WRITE", "Read_Stmt": "READ",
    "Stop_Stmt": "STOP", "Allocate_Stmt": "ALLOCATE", "Deallocate_Stmt": "DEALLOCATE",
    "Pointer_Assignment_Stmt": "pointer assignment", "Where_Construct": "WHERE", "Where_Stmt": "WHERE",
    "Case_Construct": "SELECT CASE", "Exit_Stmt": "EXIT", "Cycle_Stmt": "CYCLE", "Open_Stmt": "OPEN",
    "Close_Stmt": "CLOSE", "Format_Stmt": "FORMAT", "Entry_Stmt": "ENTRY", "Forall_Construct": "FORALL",
    "Forall_Stmt": "FORALL", "Derived_Type_Def": "derived type", "Data_Stmt": "DATA",
    "Equivalence_Stmt": "EQUIVALENCE", "Namelist_Stmt": "NAMELIST", "Associate_Construct": "ASSOCIATE",
    "Select_Type_Construct": "SELECT TYPE", "Block_Construct": "BLOCK", "Interface_Block": "INTERFACE",
    "Pause_Stmt": "PAUSE", "Inquire_Stmt": "INQUIRE", "Rewind_Stmt": "REWIND", "Nullify_Stmt": "NULLIFY",
}


def construct_name(node: object) -> str:
    cls = type(node).__name__
    return _FRIENDLY.get(cls, cls.replace("_Stmt", "").replace("_", " ").upper())
