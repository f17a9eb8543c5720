"""What every target renderer shares: the registry of target descriptors, the
result type, an indented code buffer, the visitor dispatch and the structured
``Unsupported`` error.

A renderer is a visitor: ``visit(node)`` calls ``visit_<NodeClass>``; a node
without a method raises ``Unsupported(node, target, reason)``. A backend is a
small subclass that fills in tables; the shared walking lives in base classes
(``targets.cstyle`` for CUDA and Kokkos).

The registry holds no mutable module state: the built-in targets are an
immutable table of module paths, imported on first use, and a ``Registry``
object carries any extra renderers a caller adds (plugins, experiments).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

from targets.cmake import cuda_cmake, kokkos_cmake
from targets.fortran_interface import fortran_interface, interface_path
from translate import ir
from translate.partition import PartitionError, Segment, partition
from translate.schedule import Schedule, apply_schedule


@dataclass(frozen=True)
class TargetInfo:
    """One target as the rest of the tool sees it: every list of targets derives from
    :data:`TARGETS`, and validation builds, runs and audits a target as its entry says."""

    name: str
    module: str  # the renderer's module, imported on first use
    extension: str  # of the generated source, ``NAME_<target>.<extension>``
    title: str  # in the agents' prompts
    fence: str  # the language of a fenced code block holding its source
    colour: str  # in the report's charts
    language: str  # "c++" or "python": which anti-cheat rules read its source
    runner: str  # how validation calls it: "ctypes" (kt_NAME of a shared library) or "triton" (the launcher)
    toolchain: tuple[str, ...]  # the probes of ``translate doctor`` it needs to be built here
    cmake: Callable[[str, Iterable[str]], str] | None = None  # its CMakeLists (workflow, sources): users' and
    # validation's build alike; None: not compiled (imported as Python)
    package_root: str = ""  # the CMake variable naming where its runtime is installed
    gpu: bool = False  # its kernels run on a GPU where there is one (profiled there)
    needs_gpu_to_run: bool = False  # built here, run only where there is a GPU

    @property
    def compiled(self) -> bool:
        """Built into a library before it runs (False: imported as Python)."""
        return self.cmake is not None

    @property
    def c_abi(self) -> bool:
        """Whether its translations have a ``kt_NAME`` shim a C or Fortran program can call."""
        return self.runner == "ctypes"

    @property
    def usable(self) -> tuple[str, ...]:
        """The outcomes that leave a translation usable in a migrated program or a regression
        suite: validated, or built where the target needs a GPU to run."""
        return ("validated", "compiled") if self.needs_gpu_to_run else ("validated",)

    def symbol(self, routine: str) -> str:
        """The entry validation calls for ``routine``."""
        return f"kt_{routine.lower()}" if self.c_abi else routine.lower()


TARGETS: Mapping[str, TargetInfo] = MappingProxyType({t.name: t for t in (
    TargetInfo("kokkos", "targets.kokkos", "cpp", "Kokkos C++", "cpp", "#1f77b4", "c++", "ctypes",
               ("cmake", "g++", "kokkos"), kokkos_cmake, package_root="Kokkos_ROOT"),
    TargetInfo("cuda", "targets.cuda", "cu", "CUDA C++", "cuda", "#2ca02c", "c++", "ctypes", ("cmake", "nvcc"),
               cuda_cmake, gpu=True, needs_gpu_to_run=True),
    TargetInfo("triton", "targets.triton", "py", "Triton (Python)", "python", "#d62728", "python", "triton",
               ("triton",), gpu=True),
)})
BUILTIN_TARGETS: Mapping[str, str] = MappingProxyType({name: t.module for name, t in TARGETS.items()})
C_ABI_TARGETS = tuple(name for name, t in TARGETS.items() if t.c_abi)  # what a migrated program can call


class Unsupported(Exception):
    """A construct a renderer cannot translate. Structured so that the report
    and the LLM agent can act on it: ``node_type``, ``target``, ``reason``."""

    def __init__(self, node: object, target: str, reason: str = "") -> None:
        self.node = node
        self.node_type = type(node).__name__
        self.target = target
        self.reason = reason or f"no rule for {self.node_type}"
        super().__init__(f"{target}: cannot translate {self.node_type}: {self.reason}")

    def to_dict(self) -> dict[str, str]:
        return {"target": self.target, "node_type": self.node_type, "reason": self.reason, "node": repr(self.node)}


@dataclass(frozen=True)
class Rendered:
    """The output of one renderer for one kernel.

    ``files`` maps relative paths (``kokkos/daxpy_kokkos.cpp``) to text;
    ``entry`` is the file with the shim or launcher; ``symbol`` is the name to
    call in it (``kt_daxpy`` for the C targets, ``daxpy`` for Triton)."""

    files: dict[str, str]
    entry: str
    symbol: str
    target: str = ""
    notes: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return self.files[self.entry]

    def write(self, root: Path) -> list[Path]:
        out = []
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            out.append(path)
        return out


class CodeBuffer:
    """Lines of code with an indentation level.

    >>> b = CodeBuffer()
    >>> with b.block("if (n <= 0)"):
    ...     b.line("return;")
    >>> print(b.text(), end="")
    if (n <= 0) {
        return;
    }
    """

    def __init__(self, unit: str = "    ", level: int = 0) -> None:
        self.unit = unit
        self.level = level
        self._lines: list[str] = []

    def line(self, text: str = "") -> None:
        self._lines.append(f"{self.unit * self.level}{text}" if text else "")

    def lines(self, texts: Iterable[str]) -> None:
        for t in texts:
            self.line(t)

    def splice(self, other: CodeBuffer | str) -> None:
        """Append another buffer's text (or a block of text) at this level."""
        text = other.text() if isinstance(other, CodeBuffer) else other
        for t in text.rstrip("\n").split("\n"):
            self.line(t)

    def blank(self) -> None:
        if self._lines and self._lines[-1] != "":
            self._lines.append("")

    @contextmanager
    def indent(self, by: int = 1) -> Iterator[None]:
        self.level += by
        try:
            yield
        finally:
            self.level -= by

    @contextmanager
    def block(self, header: str, closer: str = "}", opener: str = " {") -> Iterator[None]:
        self.line(f"{header}{opener}")
        with self.indent():
            yield
        self.line(closer)

    def text(self) -> str:
        return "\n".join(self._lines).rstrip("\n") + "\n"

    __str__ = text


class Renderer(ABC):
    """Base of every target. Subclasses set ``name`` and implement ``render``; ``visit``
    dispatches on the node's class name. What the rest of the tool needs to know about a
    target is its :class:`TargetInfo`."""

    name: ClassVar[str] = ""

    def __init__(self, schedule: Schedule | None = None) -> None:
        self.schedule = schedule or Schedule()

    def visit(self, node: object, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise Unsupported(node, self.name, f"{self.name} has no rule for {type(node).__name__}")
        return method(node, *args, **kwargs)

    def unsupported(self, node: object, reason: str) -> Unsupported:
        return Unsupported(node, self.name, reason)

    def segments(self, kernel: ir.Kernel, schedule: Schedule | None = None) -> tuple[ir.Kernel, tuple[Segment, ...]]:
        """The scheduled kernel and its host/device partition."""

        scheduled = apply_schedule(kernel, schedule or self.schedule)
        try:
            return scheduled, tuple(partition(scheduled))
        except PartitionError as err:
            raise Unsupported(kernel, self.name, str(err)) from err

    @abstractmethod
    def render(self, kernel: ir.Kernel, schedule: Schedule | None = None) -> Rendered:
        """Kernel (analysed) -> files. Raises ``Unsupported``."""

    def build_files(self, workflow: str, rendered: Iterable[Rendered]) -> dict[str, str]:
        """The build recipe (``<target>/CMakeLists.txt``) for several rendered kernels of one
        workflow; empty when the target needs none."""
        info = TARGETS.get(self.name)
        if info is None or info.cmake is None:
            return {}
        return {f"{self.name}/CMakeLists.txt": info.cmake(workflow, [Path(r.entry).name for r in rendered])}


def with_fortran_interface(files: dict[str, str], kernel: ir.Kernel) -> dict[str, str]:
    """``files`` plus the Fortran ``bind(C)`` interface to the kernel's C shim,
    where Fortran has types for its arguments (f16/bf16 have none)."""

    try:
        return {**files, interface_path(kernel): fortran_interface(kernel)}
    except ValueError:
        return files


def shim_symbol(kernel: ir.Kernel) -> str:
    return f"kt_{kernel.name.lower()}"


def register(cls: type[Renderer]) -> type[Renderer]:
    """Class decorator marking a renderer for discovery in its module (the
    built-in table names the module; nothing global is mutated)."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no target name")
    cls._kt_registered = True  # type: ignore[attr-defined]
    return cls


@dataclass
class Registry:
    """Renderers by target name: the built-in table plus ``extra`` classes."""

    extra: dict[str, type[Renderer]] = field(default_factory=dict)

    def add(self, cls: type[Renderer]) -> type[Renderer]:
        register(cls)
        self.extra[cls.name] = cls
        return cls

    def renderer_class(self, name: str) -> type[Renderer]:
        if name in self.extra:
            return self.extra[name]
        if name not in BUILTIN_TARGETS:
            raise KeyError(f"unknown target '{name}' (known: {', '.join(self.names())})")
        module = importlib.import_module(BUILTIN_TARGETS[name])
        for value in vars(module).values():
            if (
                isinstance(value, type) and issubclass(value, Renderer)
                and getattr(value, "_kt_registered", False) and value.name == name
            ):
                return value
        raise KeyError(f"module {module.__name__} registers no renderer named '{name}'")

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*BUILTIN_TARGETS, *self.extra]))

    def available(self) -> tuple[str, ...]:
        """Targets whose renderer can be loaded here."""
        out = []
        for n in self.names():
            try:
                self.renderer_class(n)
            except (ImportError, KeyError):
                continue
            out.append(n)
        return tuple(out)


def get_renderer(name: str, schedule: Schedule | None = None, registry: Registry | None = None) -> Renderer:
    return (registry or Registry()).renderer_class(name)(schedule)


def available(registry: Registry | None = None) -> tuple[str, ...]:
    return (registry or Registry()).available()

