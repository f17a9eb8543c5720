"""Load and validate ``workflows.yaml``.

Schema (every key; ``language`` and ``sources`` are required, the rest optional)::

    workflows:
      <name>:
        root: examples/x               # folder the paths below are relative to (default: the yaml's folder)
        language: fortran              # fortran | c | pytorch
        sources: [src/*.f, src/*.f90]  # globs; each must match at least one file
        targets: [kokkos, cuda, triton]               # default: all three
        sizes: {n: 1000}               # integers for size arguments and symbolic dimensions
                                       # (pytorch: also a list of integers for a tuple constant,
                                       # input_shape: [512]; the different-size trial bumps each)
        values: {trans: [N, T]}        # pinned argument values; a list = validate each
                                       # (pytorch: pinned module-level constants, applied like sizes
                                       # but never changed by the different-size trial; a file is
                                       # captured at one value, so a list pins a tuple constant)
        inputs: {a: spd}               # generators: normal, uniform, positive, spd,
                                       # diag_dominant, int:LO:HI, module:function
        shapes: {x: ["1+(n-1)*abs(incx)"]}  # extents (strings or ints) where the tool cannot tell
                                       # (pytorch, a file without get_inputs(): the forward's
                                       # inputs by parameter name, float32; extents may name the
                                       # file's constants: {x: [batch_size, dim]})
        module: MyNet                  # pytorch only: the nn.Module class (default: Model, or the
                                       # file's only nn.Module subclass)
        load_cpu_s: 60                 # pytorch only: CPU seconds one file may take to load, capture
                                       # and lower in its worker (default 60; a deep network may
                                       # need minutes); a file past it is named and skipped
        init: [1024, dim]              # pytorch only: constructor arguments when the file has no
                                       # get_init_inputs(); a string is a Python expression over
                                       # the file's constants (a string literal: "'relu'")
        validate: {trials: 3, tolerance: {rtol: 1.0e-12, atol: 0.0}}   # rtol/atol also accepted flat
        optimize: {budget: 16}         # variants per slow region; 0 turns it off
        agent: {provider: none}        # or openai with model, base_url, api_key_env
        output: out/<name>             # default
        preprocess: {include: [include/], defines: {ORDER: 2}}   # Fortran: cpp for .F/.F90 files;
                                       # C: clang's preprocessor (parsers/c_clang.py) for every file
        program: {run: ..., check: ...}  # the original program, run next to the migrated one
                                       # (graph/program_config.py)
        build:                         # what the reference build adds (graph/build_config.py);
                                       # language: c: the C reference (validation/cref.py)
          sources: [common/wtime.c, common/timers.f90]   # globs: compiled and linked into the
                                       # reference, never translated (.c files with cc -c -fPIC)
          flags: [-std=legacy]         # extra gfortran flags (the workflow's own sources too)
          cflags: [-O2]                # C compiler flags for the C sources
          libraries: [-lm, lib/libfoo.a, -L/opt/x/lib, -lbar]   # at link time; paths relative to root
        regions:
          <routine>: {sizes: ..., values: ..., inputs: ..., shapes: ..., module: ..., init: ...}
    x-anything: ...                    # top-level keys starting with ``x-`` are ignored (YAML anchors)

Every problem in the file is collected and reported together in one
:class:`ConfigError`, one ``file:line: key.path: message`` per line. For
``language: fortran`` names (regions, sizes, values, inputs, shapes keys) are
stored lower-cased and looked up case-insensitively; for C and PyTorch they are
exact.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from graph.agent_config import AgentConfig, parse_agent
from graph.build_config import BuildConfig, library_args, parse_build
from graph.program_config import ProgramConfig, parse_program
from graph.yamlcheck import (
    Checker,
    ConfigError,
    Issue,
    KeyPath,
    describe,
    did_you_mean,
    format_key,
    index_lines,
)
from targets.base import BUILTIN_TARGETS

__all__ = [
    "AgentConfig", "BuildConfig", "ConfigError", "Issue", "OptimizeConfig", "PreprocessConfig", "ProjectConfig",
    "RegionConfig", "ValidateConfig", "Workflow", "load", "loads",
]

CONFIG_NAME = "workflows.yaml"
LANGUAGES = ("fortran", "c", "pytorch")
TARGETS = tuple(BUILTIN_TARGETS)  # the target registry's names, in its order
MATMUL_CHOICES = ("library", "generated")
GENERATORS = ("normal", "uniform", "positive", "spd", "diag_dominant")

WORKFLOW_KEYS = (
    "root", "language", "sources", "targets", "sizes", "values", "inputs", "shapes",
    "validate", "optimize", "agent", "output", "preprocess", "regions", "module", "init", "build", "program",
    "load_cpu_s",
)
LOAD_CPU_S = 60.0  # the default of load_cpu_s
REGION_KEYS = ("sizes", "values", "inputs", "shapes", "module", "init")
PYTORCH_ONLY_KEYS = ("module", "init")
VALIDATE_KEYS = ("trials", "tolerance", "rtol", "atol")
TOLERANCE_KEYS = ("rtol", "atol")
OPTIMIZE_KEYS = ("budget", "matmul", "fraction", "sizes")
PREPROCESS_KEYS = ("include", "defines")

Scalar = str | int | float | bool
Size = int | tuple[int, ...]  # a tuple only for PyTorch workflows (a tuple constant)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORKFLOW_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
_REGION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # routine names, PyTorch file stems
_EXTENT = re.compile(r"[A-Za-z0-9_\s+\-*/():,.]+")
_INT_GEN = re.compile(r"int:(-?\d+):(-?\d+)")
_FUNC_GEN = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*")


# ---------------------------------------------------------------- the config


@dataclass(frozen=True)
class ValidateConfig:
    trials: int = 3
    rtol: float | None = None  # None: the default for the dtype
    atol: float | None = None

    @property
    def tolerance(self) -> tuple[float, float] | None:
        """(rtol, atol) where the workflow gives both, else None (the defaults by dtype)."""
        return (self.rtol, self.atol) if self.rtol is not None and self.atol is not None else None


@dataclass(frozen=True)
class OptimizeConfig:
    budget: int = 0  # schedule variants per slow region; 0 turns optimization off
    # Triton target: a matmul (and bmm, linear) runs as cuBLAS through torch ("library",
    # the faster in fp32/fp64 where measured: docs/measurements/tuning-evidence.md) or as the
    # generated tiled kernel with its elementwise tail fused ("generated")
    matmul: str = "library"
    # a target below this fraction of its roofline gets the variant search
    fraction: float = 0.5
    # sizes regions are profiled at (default: the validation sizes); they override those
    sizes: Mapping[str, int] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.budget > 0


@dataclass(frozen=True)
class PreprocessConfig:
    include: list[str] = field(default_factory=list)  # folders, relative to the workflow root
    defines: dict[str, str] = field(default_factory=dict)  # NAME -> value ("1" for a bare define)


@dataclass(frozen=True)
class RegionConfig:
    name: str
    sizes: dict[str, Size] = field(default_factory=dict)
    values: dict[str, Scalar | list[Scalar]] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    module: str | None = None  # PyTorch: the nn.Module class to translate
    init: tuple[Scalar, ...] | None = None  # PyTorch: constructor arguments (strings: expressions)


@dataclass(frozen=True)
class Workflow:
    name: str
    language: str
    sources: list[str]
    targets: list[str] = field(default_factory=lambda: list(TARGETS))
    sizes: dict[str, Size] = field(default_factory=dict)
    values: dict[str, Scalar | list[Scalar]] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    validate: ValidateConfig = field(default_factory=ValidateConfig)
    optimize: OptimizeConfig = field(default_factory=OptimizeConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    output: str = ""  # "" -> "out/<name>"
    preprocess: PreprocessConfig = field(default_factory=PreprocessConfig)
    build: BuildConfig = field(default_factory=BuildConfig)
    regions: dict[str, RegionConfig] = field(default_factory=dict)
    module: str | None = None
    init: tuple[Scalar, ...] | None = None
    program: ProgramConfig | None = None  # how the original program is built, run and judged
    load_cpu_s: float = LOAD_CPU_S  # pytorch: CPU seconds a file's loader may take
    root: Path = Path(".")
    config_path: Path | None = field(default=None, compare=False)
    key_lines: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.output:
            object.__setattr__(self, "output", f"out/{self.name}")

    def normalize(self, name: str) -> str:
        """The stored form of a routine or argument name (lower case for Fortran)."""
        return name.lower() if self.language == "fortran" else name

    def files(self) -> list[Path]:
        """The source files the ``sources`` globs match under ``root``: sorted, deduplicated.
        A glob that matches no file raises :class:`ConfigError`."""
        found: set[Path] = set()
        issues = []
        for i, pattern in enumerate(self.sources):
            matched = expand_glob(self.root, pattern)
            if not matched:
                key = f"workflows.{self.name}.sources[{i}]"
                issues.append(Issue(str(self.config_path or CONFIG_NAME), self.key_lines.get(key), key,
                                    f"glob '{pattern}' matches no file under {self.root}"))
            found.update(matched)
        if issues:
            raise ConfigError(issues)
        return sorted(found)

    def build_files(self) -> list[Path]:
        """The files ``build.sources`` match under ``root`` (sorted; the workflow's own sources
        left out). Checked when the file was loaded; a glob that matches nothing now adds nothing."""
        own = {f for pattern in self.sources for f in expand_glob(self.root, pattern)}
        found = {f for pattern in self.build.sources for f in expand_glob(self.root, pattern)}
        return sorted(found - own)

    def build_libraries(self) -> list[str]:
        """``build.libraries`` as linker arguments (library files and ``-L`` folders absolute)."""
        return library_args(self.build, self.root)

    @property
    def output_dir(self) -> Path:
        return self.root / self.output

    def include_dirs(self) -> list[Path]:
        return [self.root / d for d in self.preprocess.include]

    def cpp_flags(self) -> list[str]:
        """``-I``/``-D`` flags for gfortran -cpp, cpp or a C compiler."""
        flags = [f"-I{d}" for d in self.include_dirs()]
        return flags + [f"-D{k}={v}" for k, v in self.preprocess.defines.items()]

    def has_region(self, name: str) -> bool:
        return self.normalize(name) in self.regions

    def region(self, name: str) -> RegionConfig:
        """Settings for one routine: the workflow's sizes/values/inputs/shapes overridden by
        the region's own. A name pinned by the region in ``sizes`` drops a workflow-level
        ``values`` entry of the same name and the other way round. Unknown names get the
        workflow-level settings."""
        key = self.normalize(name)
        own = self.regions.get(key, RegionConfig(key))
        sizes = {k: v for k, v in self.sizes.items() if k not in own.values} | own.sizes
        values = {k: v for k, v in self.values.items() if k not in own.sizes} | own.values
        return RegionConfig(key, sizes, values, self.inputs | own.inputs, self.shapes | own.shapes,
                            own.module if own.module is not None else self.module,
                            own.init if own.init is not None else self.init)


@dataclass(frozen=True)
class ProjectConfig:
    path: Path  # the workflows.yaml
    root: Path  # the folder holding it
    workflows: dict[str, Workflow]

    def workflow(self, name: str) -> Workflow:
        if name not in self.workflows:
            hint = did_you_mean(name, list(self.workflows))
            raise ConfigError([Issue(str(self.path), None, f"workflows.{name}",
                                     f"no such workflow{hint}; defined: {', '.join(self.workflows)}")])
        return self.workflows[name]


# -------------------------------------------------------------------- loading


def load(path_or_dir: Path | str) -> ProjectConfig:
    """Load a workflows.yaml (or the one in a folder). Raises :class:`ConfigError`."""
    path = Path(path_or_dir)
    if path.is_dir():
        path = path / CONFIG_NAME
    if not path.is_file():
        raise ConfigError([Issue(str(path), None, "", "no such file")])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError([Issue(str(path), None, "", f"cannot read: {e}")]) from e
    return loads(text, path)


def loads(text: str, path: Path | str) -> ProjectConfig:
    """Parse configuration text as if read from ``path`` (relative paths resolve from its folder)."""
    path = Path(path)
    shown = str(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        problem = getattr(e, "problem", None) or str(e)
        context, cmark = getattr(e, "context", None), getattr(e, "context_mark", None)
        msg = f"invalid YAML: {problem}"
        if context and cmark is not None and mark is not None and cmark.line != mark.line:
            msg += f" ({context} that starts on line {cmark.line + 1})"
        elif context:
            msg += f" ({context})"
        raise ConfigError([Issue(shown, mark.line + 1 if mark else None, "", msg)]) from e
    lines: dict[KeyPath, int] = {}
    dups: list[tuple[KeyPath, int]] = []
    if node is not None:
        index_lines(node, (), lines, dups)
    checker = Checker(shown, lines)
    for dup_path, dup_line in dups:
        checker.issues.append(Issue(shown, dup_line, format_key(dup_path), "duplicate key"))
    base = path.parent.resolve()
    workflows = _project(checker, data, base, path.resolve())
    if checker.issues:
        ordered = sorted(checker.issues, key=lambda i: (i.line is None, i.line or 0))
        raise ConfigError(ordered)
    return ProjectConfig(path.resolve(), base, workflows)


def expand_glob(root: Path, pattern: str) -> list[Path]:
    hits = glob.glob(pattern, root_dir=root, recursive=True)
    return sorted({(root / h).resolve() for h in hits if (root / h).is_file()})


# ------------------------------------------------------------------- schema


def _project(c: Checker, data: object, base: Path, config_path: Path) -> dict[str, Workflow]:
    if data is None:
        c.error((), "the file is empty; expected a 'workflows:' mapping")
        return {}
    top = c.mapping(data, (), ("workflows",), required=("workflows",), extra=lambda k: k.startswith("x-"))
    if "workflows" not in top:
        return {}
    raw = c.mapping(top["workflows"], ("workflows",), None)
    if not raw and isinstance(top["workflows"], (dict, type(None))):
        c.error(("workflows",), "no workflows defined")
    workflows: dict[str, Workflow] = {}
    outputs: dict[Path, str] = {}
    for name, body in raw.items():
        if not _WORKFLOW_NAME.fullmatch(name):
            c.error(("workflows", name), "workflow names may hold only letters, digits, '_' and '-'")
            continue
        wf = _workflow(c, name, body, base, config_path)
        if wf is None:
            continue
        out = wf.output_dir.resolve()
        if out in outputs:
            c.error(("workflows", name, "output"), f"same output folder as workflow '{outputs[out]}'")
        outputs[out] = name
        workflows[name] = wf
    return workflows


def _workflow(c: Checker, name: str, body: object, base: Path, config_path: Path) -> Workflow | None:
    p: KeyPath = ("workflows", name)
    before = len(c.issues)
    w = c.mapping(body, p, WORKFLOW_KEYS, required=("language", "sources"))

    root = base
    root_ok = True
    if "root" in w:
        r = c.string(w["root"], (*p, "root"))
        root_ok = r is not None
        if r is not None:
            root = (base / r).resolve()
            if not root.is_dir():
                c.error((*p, "root"), f"folder '{r}' does not exist (relative to {base})")
                root_ok = False

    language = "fortran"
    if "language" in w:
        lang = w["language"]
        if lang not in LANGUAGES:
            hint = did_you_mean(str(lang), LANGUAGES)
            c.error((*p, "language"), f"unknown language {describe(lang)}{hint}; expected one of: "
                    + ", ".join(LANGUAGES))
        else:
            language = lang
    norm: Callable[[str], str] = str.lower if language == "fortran" else str

    sources = c.string_list(w["sources"], (*p, "sources"), "globs") if "sources" in w else []
    if root_ok:
        for i, pattern in enumerate(sources):
            if not expand_glob(root, pattern):
                c.error((*p, "sources", i), f"glob '{pattern}' matches no file under {root}")

    targets = list(TARGETS)
    if "targets" in w:
        targets = []
        for i, t in enumerate(c.string_list(w["targets"], (*p, "targets"), "targets")):
            if t not in TARGETS:
                c.error((*p, "targets", i), f"unknown target '{t}'{did_you_mean(t, TARGETS)}; "
                        f"expected one of: {', '.join(TARGETS)}")
            elif t in targets:
                c.error((*p, "targets", i), f"target '{t}' listed twice")
            else:
                targets.append(t)

    settings = _settings(c, p, w, norm, language)
    module, init = _pytorch_keys(c, p, w, language)

    output = f"out/{name}"
    if "output" in w:
        output = c.string(w["output"], (*p, "output")) or output

    regions: dict[str, RegionConfig] = {}
    for key, (raw_name, body_r) in c.names(w.get("regions"), (*p, "regions"), norm, _REGION_NAME).items():
        rp: KeyPath = (*p, "regions", raw_name)
        r = c.mapping(body_r, rp, REGION_KEYS)
        sizes, values, inputs, shapes = _settings(c, rp, r, norm, language)
        regions[key] = RegionConfig(key, sizes, values, inputs, shapes, *_pytorch_keys(c, rp, r, language))

    validate = _validate(c, (*p, "validate"), w.get("validate"))
    optimize = OptimizeConfig()
    if "optimize" in w:
        o = c.mapping(w["optimize"], (*p, "optimize"), OPTIMIZE_KEYS)
        budget = c.integer(o["budget"], (*p, "optimize", "budget"), minimum=0) if "budget" in o else 0
        matmul = o.get("matmul", "library")
        if matmul not in MATMUL_CHOICES:
            c.error((*p, "optimize", "matmul"), f"unknown matmul choice {describe(matmul)}"
                    f"{did_you_mean(str(matmul), MATMUL_CHOICES)}; expected one of: {', '.join(MATMUL_CHOICES)}")
            matmul = "library"
        fraction = c.non_negative_number(o["fraction"], (*p, "optimize", "fraction")) if "fraction" in o else 0.5
        if fraction is not None and fraction > 1:
            c.error((*p, "optimize", "fraction"), f"a fraction of the roofline is at most 1, got {fraction}")
        osizes = _settings(c, (*p, "optimize"), {"sizes": o.get("sizes")}, norm, language)[0] if "sizes" in o else {}
        optimize = OptimizeConfig(budget or 0, str(matmul), float(fraction if fraction is not None else 0.5),
                                  {k: v for k, v in osizes.items() if isinstance(v, int)})
    load_cpu_s = LOAD_CPU_S
    if "load_cpu_s" in w:
        if language != "pytorch":
            c.error((*p, "load_cpu_s"), "'load_cpu_s' applies to language: pytorch only")
        got = c.non_negative_number(w["load_cpu_s"], (*p, "load_cpu_s"))
        if got is not None and got < 1:
            c.error((*p, "load_cpu_s"), f"a loader needs at least 1 CPU second, got {w['load_cpu_s']}")
        elif got is not None:
            load_cpu_s = got
    agent = parse_agent(c, (*p, "agent"), w.get("agent"))
    preprocess = _preprocess(c, (*p, "preprocess"), w.get("preprocess"), root if root_ok else None)
    build = parse_build(c, (*p, "build"), w.get("build"), root if root_ok else None, expand_glob)
    program = parse_program(c, (*p, "program"), w["program"], language, root if root_ok else None, expand_glob) \
        if "program" in w else None

    if len(c.issues) != before:
        return None
    key_lines = {format_key(k): v for k, v in c.lines.items() if k[:2] == p}
    return Workflow(
        name=name, language=language, sources=sources, targets=targets,
        sizes=settings[0], values=settings[1], inputs=settings[2], shapes=settings[3],
        validate=validate, optimize=optimize, agent=agent, output=output, preprocess=preprocess, build=build,
        regions=regions, module=module, init=init, program=program, load_cpu_s=load_cpu_s, root=root,
        config_path=config_path,
        key_lines=key_lines,
    )



def _pytorch_keys(c: Checker, p: KeyPath, w: dict[str, Any],
                  language: str) -> tuple[str | None, tuple[Scalar, ...] | None]:
    """``module`` and ``init`` (PyTorch workflows only)."""
    for k in PYTORCH_ONLY_KEYS:
        if k in w and language != "pytorch":
            c.error((*p, k), f"'{k}' applies to language: pytorch only")
    if language != "pytorch":
        return None, None
    module = None
    if "module" in w:
        module = c.string(w["module"], (*p, "module"))
        if module is not None and not _IDENT.fullmatch(module):
            c.error((*p, "module"), f"'{module}' is not a Python class name")
            module = None
    init = None
    if "init" in w:
        v = w["init"]
        if v is None:
            v = []
        if not isinstance(v, list):
            c.error((*p, "init"), f"expected a list of constructor arguments, got {describe(v)}")
        else:
            bad = [i for i, item in enumerate(v) if not _is_scalar(item)]
            for i in bad:
                c.error((*p, "init", i), f"expected a number, boolean or string (a Python expression), "
                        f"got {describe(v[i])}")
            if not bad:
                init = tuple(v)
    return module, init


def _settings(c: Checker, p: KeyPath, w: dict[str, Any], norm: Callable[[str], str], language: str = "fortran",
              ) -> tuple[dict[str, Size], dict[str, Scalar | list[Scalar]], dict[str, str], dict[str, tuple[str, ...]]]:
    """sizes, values, inputs and shapes of a workflow or a region. PyTorch sizes may also be
    lists of integers (tuple constants)."""
    sizes: dict[str, Size] = {}
    for key, (raw, v) in c.names(w.get("sizes"), (*p, "sizes"), norm).items():
        if language == "pytorch" and isinstance(v, list):
            if not v:
                c.error((*p, "sizes", raw), "expected an integer or a non-empty list of integers")
                continue
            items = [c.integer(item, (*p, "sizes", raw, i)) for i, item in enumerate(v)]
            if all(i is not None for i in items):
                sizes[key] = tuple(int(i) for i in items if i is not None)
            continue
        n = c.integer(v, (*p, "sizes", raw))
        if n is not None:
            sizes[key] = n
    values: dict[str, Scalar | list[Scalar]] = {}
    for key, (raw, v) in c.names(w.get("values"), (*p, "values"), norm).items():
        vp: KeyPath = (*p, "values", raw)
        if key in sizes:
            c.error(vp, f"'{raw}' is also given in sizes; give it in one place")
        elif isinstance(v, list):
            if not v:
                c.error(vp, "expected a value or a non-empty list of values")
            bad = [i for i, item in enumerate(v) if not _is_scalar(item)]
            for i in bad:
                c.error((*vp, i), f"expected a string, number or boolean, got {describe(v[i])}")
            if v and not bad:
                values[key] = list(v)
        elif _is_scalar(v):
            values[key] = v
        else:
            c.error(vp, f"expected a value or a list of values, got {describe(v)}")
    inputs: dict[str, str] = {}
    for key, (raw, v) in c.names(w.get("inputs"), (*p, "inputs"), norm).items():
        ip: KeyPath = (*p, "inputs", raw)
        gen = c.string(v, ip)
        if gen is not None:
            problem = _generator_problem(gen)
            if problem:
                c.error(ip, problem)
            else:
                inputs[key] = gen
    shapes: dict[str, tuple[str, ...]] = {}
    for key, (raw, v) in c.names(w.get("shapes"), (*p, "shapes"), norm).items():
        sp: KeyPath = (*p, "shapes", raw)
        if not isinstance(v, list) or not v:
            c.error(sp, f"expected a list of extents (strings or integers), got {describe(v)}")
            continue
        extents = []
        for i, e in enumerate(v):
            if isinstance(e, int) and not isinstance(e, bool):
                extents.append(str(e))
            elif isinstance(e, str) and e.strip() and _EXTENT.fullmatch(e):
                extents.append(norm(e.strip()))
            else:
                c.error((*sp, i), f"expected an extent expression or an integer, got {describe(e)}")
        if len(extents) == len(v):
            shapes[key] = tuple(extents)
    return sizes, values, inputs, shapes


def _is_scalar(v: object) -> bool:
    return isinstance(v, (str, int, float, bool))


def _generator_problem(gen: str) -> str | None:
    if gen in GENERATORS:
        return None
    m = _INT_GEN.fullmatch(gen)
    if m:
        return None if int(m.group(1)) <= int(m.group(2)) else f"'{gen}': LO must be <= HI"
    if gen.startswith("int:"):
        return f"'{gen}': expected int:LO:HI with integer bounds"
    if _FUNC_GEN.fullmatch(gen):
        return None
    return (f"unknown input generator '{gen}'{did_you_mean(gen, GENERATORS)}; expected one of: "
            f"{', '.join(GENERATORS)}, int:LO:HI, module:function")


def _validate(c: Checker, p: KeyPath, value: object) -> ValidateConfig:
    v = c.mapping(value, p, VALIDATE_KEYS)
    trials = 3
    if "trials" in v:
        t = c.integer(v["trials"], (*p, "trials"), minimum=1)
        trials = t if t is not None else trials
    tol: dict[str, float | None] = {"rtol": None, "atol": None}
    if "tolerance" in v:
        t_map = c.mapping(v["tolerance"], (*p, "tolerance"), TOLERANCE_KEYS)
        for k in TOLERANCE_KEYS:
            if k in t_map:
                tol[k] = c.non_negative_number(t_map[k], (*p, "tolerance", k))
    for k in TOLERANCE_KEYS:
        if k in v:
            if tol[k] is not None:
                c.error((*p, k), f"{k} is also given under tolerance; give it in one place")
            else:
                tol[k] = c.non_negative_number(v[k], (*p, k))
    return ValidateConfig(trials, tol["rtol"], tol["atol"])


def _preprocess(c: Checker, p: KeyPath, value: object, root: Path | None) -> PreprocessConfig:
    pp = c.mapping(value, p, PREPROCESS_KEYS)
    include: list[str] = []
    if "include" in pp:
        for i, d in enumerate(c.string_list(pp["include"], (*p, "include"), "folders")):
            if root is not None and not (root / d).is_dir():
                c.error((*p, "include", i), f"include folder '{d}' does not exist under {root}")
            include.append(d)
    defines: dict[str, str] = {}
    for k, v in c.mapping(pp.get("defines"), (*p, "defines"), None).items():
        if not _IDENT.fullmatch(k):
            c.error((*p, "defines", k), "not a valid macro name")
        elif v is None or v is True:
            defines[k] = "1"
        elif v is False:
            defines[k] = "0"
        elif isinstance(v, (int, float, str)):
            defines[k] = str(v)
        else:
            c.error((*p, "defines", k), f"expected a value for the macro, got {describe(v)}")
    return PreprocessConfig(include, defines)

