"""The bundled examples: their workflows load, every glob matches, every routine a workflow
configures exists, and (slow) every source compiles with gfortran and the demo program runs."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from graph.config import Workflow, load
from parsers.c import parse_files as parse_c_files

REPO = Path(__file__).resolve().parents[1]
NUMERICS = REPO / "examples" / "fortran_numerics"
ROUTINE = re.compile(
    r"^\s*(?:(?:integer|logical|real(?:\(\d\))?|double\s+precision)\s+)?(?:subroutine|function)\s+(\w+)",
    re.IGNORECASE | re.MULTILINE,
)

needs_gfortran = pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran not installed")


def routines(wf: Workflow) -> set[str]:
    """The regions a workflow's sources define: routines for Fortran, file stems for PyTorch."""
    if wf.language == "pytorch":
        return {f.stem for f in wf.files()}
    if wf.language == "c":
        modules = parse_c_files(wf.files(), wf.root, wf.include_dirs(), dict(wf.preprocess.defines))
        return {k.name for m in modules for k in m.kernels}
    names: set[str] = set()
    for f in wf.files():
        text = "\n".join(line for line in f.read_text().splitlines() if not re.match(r"^[*cC!]", line))
        names.update(n.lower() for n in ROUTINE.findall(text))
    return names


@pytest.mark.parametrize("where", [REPO, NUMERICS], ids=["root", "fortran_numerics"])
def test_workflows_load_and_every_glob_matches(where: Path) -> None:
    cfg = load(where)
    assert cfg.workflows
    for wf in cfg.workflows.values():
        files = wf.files()
        assert files, wf.name
        assert all(f.is_file() and wf.root in f.parents for f in files)
        for d in wf.include_dirs():
            assert d.is_dir()
        # every region configured is a routine in the workflow's sources
        missing = set(wf.regions) - routines(wf)
        assert not missing, f"{wf.name}: no routine named {sorted(missing)}"


def test_root_workflows_mirror_the_example() -> None:
    root, ex = load(REPO), load(NUMERICS)
    mirrored = {n.removeprefix("numerics_"): wf for n, wf in root.workflows.items() if n.startswith("numerics_")}
    assert set(mirrored) == set(ex.workflows)
    for name, wf in ex.workflows.items():
        r = mirrored[name]
        assert r.root == ex.root == NUMERICS
        same = replace(r, name=wf.name, output=wf.output, config_path=wf.config_path)
        assert same == wf, name
    names = [n.lower() for n in root.workflows]
    assert len(names) == len(set(names))


def test_root_workflows_mirror_the_c_example() -> None:
    root, ex = load(REPO), load(REPO / "examples" / "c_kernels")
    assert ex.workflows and all(wf.language == "c" for wf in ex.workflows.values())
    for name, wf in ex.workflows.items():
        r = root.workflow(name)
        assert r.root == ex.root
        assert replace(r, output=wf.output, config_path=wf.config_path) == wf, name


def test_root_workflows_mirror_the_program_example() -> None:
    root, ex = load(REPO), load(REPO / "examples" / "fortran_program")
    r, wf = root.workflow("program_heat"), ex.workflow("heat")
    assert r.program is not None and r.program == wf.program
    assert replace(r, name=wf.name, output=wf.output, config_path=wf.config_path) == wf


def test_custom_input_generator_gives_a_dominant_diagonal() -> None:
    wf = load(NUMERICS).workflow("recurrences")
    spec = wf.region("TRIDAG").inputs["b"]
    module, _, fn = spec.partition(":")
    loader = importlib.util.spec_from_file_location(module, wf.root / f"{module}.py")
    assert loader is not None and loader.loader is not None
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    b = getattr(mod, fn)((1000,), np.dtype("float64"), np.random.default_rng(0))
    assert b.shape == (1000,) and b.dtype == np.float64
    assert np.all(np.abs(b) >= 2.5)  # off-diagonals from `uniform` are below 1 in magnitude
    assert (b < 0).any() and (b > 0).any()


def test_example_workflows_cover_what_they_should() -> None:
    ex = load(NUMERICS).workflows
    assert set(ex) == {"blas1", "matvec", "matmul", "stencils", "recurrences", "f90"}
    for wf in ex.values():
        assert wf.language == "fortran" and wf.targets == ["kokkos", "cuda", "triton"]
    assert ex["matvec"].region("dgemv_like").values["trans"] == ["N", "T", "c"]
    assert ex["blas1"].region("vaxpy").values == {"incx": [1, -2], "incy": [1, 3]}
    assert ex["blas1"].region("vscal").values["incx"] == [1, 2]
    assert ex["stencils"].preprocess.defines == {"ORDER": "2", "WEIGHTED_JACOBI": "1"}
    assert ex["stencils"].region("ideal_gas_like").inputs == {"density": "positive", "energy": "positive"}
    assert "ifirst" in routines(ex["recurrences"])  # the GO TO loop
    assert [f.name for f in ex["f90"].build_files()] == ["relax_timers.c"]  # linked into the reference


def _compile(src: Path, tmp: Path, flags: list[str]) -> subprocess.CompletedProcess[str]:
    cmd = ["gfortran", "-c", "-Wall", *flags, "-J", str(tmp), "-o", str(tmp / (src.stem + ".o")), str(src)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@needs_gfortran
def test_every_source_compiles_with_gfortran(tmp_path: Path) -> None:
    compiled: set[Path] = set()
    for wf in load(NUMERICS).workflows.values():
        for src in wf.files():
            flags = ["-cpp", *wf.cpp_flags()] if src.suffix in (".F", ".F90") else []
            done = _compile(src, tmp_path, flags)
            assert done.returncode == 0, f"{src}:\n{done.stderr}"
            assert "Error" not in done.stderr
            compiled.add(src)
    # every source file of the example belongs to some workflow (C helpers to its build:)
    helpers = {f.resolve() for wf in load(NUMERICS).workflows.values() for f in wf.build_files()}
    assert compiled | helpers == set((NUMERICS / "src").resolve().iterdir())


@pytest.mark.slow
@needs_gfortran
@pytest.mark.parametrize("defines", [["-DORDER=4"], ["-DORDER=4", "-DWEIGHTED_JACOBI"], []])
def test_stencil3d_other_preprocessor_settings(tmp_path: Path, defines: list[str]) -> None:
    done = _compile(NUMERICS / "src" / "stencil3d.F90", tmp_path, ["-cpp", f"-I{NUMERICS / 'include'}", *defines])
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@needs_gfortran
@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
@pytest.mark.parametrize("order", ["2", "4"])
def test_driver_builds_and_its_checks_pass(tmp_path: Path, order: str) -> None:
    copy = tmp_path / "fortran_numerics"
    shutil.copytree(NUMERICS, copy, ignore=shutil.ignore_patterns("out", "build", "numerics_demo", "__pycache__"))
    done = subprocess.run(["make", "-s", "run", f"ORDER={order}"], cwd=copy / "driver", capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "all checks passed"
    checks = [line for line in lines if re.match(r"^\s+(ok|FAIL)\s", line)]
    assert len(checks) >= 35 and all(line.split()[0] == "ok" for line in checks)
    assert any("On entry to DGEMV_LIKE parameter number  1" in line for line in lines)  # XERBLA returned
