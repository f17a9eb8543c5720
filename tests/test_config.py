"""graph.config: loading and validating workflows.yaml."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graph.config import (
    AgentConfig,
    ConfigError,
    OptimizeConfig,
    PreprocessConfig,
    RegionConfig,
    ValidateConfig,
    Workflow,
    load,
    loads,
)


def project(tmp_path: Path, yaml_text: str, files: tuple[str, ...] = ("src/a.f", "src/b.f90")) -> Path:
    for f in files:
        p = tmp_path / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("! source\n")
    path = tmp_path / "workflows.yaml"
    path.write_text(textwrap.dedent(yaml_text).lstrip("\n"))
    return path


def errors(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        load(path)
    return str(exc.value).splitlines()


FULL = """
workflows:
  blas1:
    language: fortran
    sources: [src/*.f, src/*.f90]
    targets: [triton, kokkos]
    sizes: {N: 1000, m: 20}
    values: {TRANS: [N, T], incx: 2, alpha: 1.5, upper: true}
    inputs: {a: spd, b: "int:1:5", c: "mygen:fill", D: diag_dominant}
    shapes: {X: ["1+(N-1)*abs(INCX)"], y: [100, m]}
    validate: {trials: 5, tolerance: {rtol: 1.0e-6, atol: 0}}
    optimize: {budget: 16}
    agent: {provider: openai, model: gpt-x, base_url: "http://localhost:8000/v1", api_key_env: MY_KEY}
    output: build/blas1
    preprocess: {include: [inc], defines: {ORDER: 4, DEBUG: null, FAST: true, NAME: abc}}
    regions:
      DGEMV:
        sizes: {M: 300}
        values: {incx: [1, -2]}
        inputs: {a: uniform}
        shapes: {a: [lda, n]}
      daxpy: {}
"""


def test_every_key_parsed(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    cfg = load(project(tmp_path, FULL))
    assert cfg.path == (tmp_path / "workflows.yaml").resolve()
    assert cfg.root == tmp_path.resolve()
    wf = cfg.workflows["blas1"]
    assert wf.name == "blas1" and wf.language == "fortran"
    assert wf.sources == ["src/*.f", "src/*.f90"]
    assert wf.targets == ["triton", "kokkos"]
    assert wf.sizes == {"n": 1000, "m": 20}
    assert wf.values == {"trans": ["N", "T"], "incx": 2, "alpha": 1.5, "upper": True}
    assert wf.inputs == {"a": "spd", "b": "int:1:5", "c": "mygen:fill", "d": "diag_dominant"}
    assert wf.shapes == {"x": ("1+(n-1)*abs(incx)",), "y": ("100", "m")}
    assert wf.validate == ValidateConfig(trials=5, rtol=1e-6, atol=0.0)
    assert wf.optimize == OptimizeConfig(budget=16) and wf.optimize.enabled
    assert wf.agent == AgentConfig("openai", "gpt-x", "http://localhost:8000/v1", "MY_KEY")
    assert wf.agent.enabled
    assert wf.output == "build/blas1" and wf.output_dir == tmp_path.resolve() / "build/blas1"
    assert wf.preprocess == PreprocessConfig(["inc"], {"ORDER": "4", "DEBUG": "1", "FAST": "1", "NAME": "abc"})
    assert wf.cpp_flags() == [f"-I{tmp_path.resolve() / 'inc'}", "-DORDER=4", "-DDEBUG=1", "-DFAST=1", "-DNAME=abc"]
    assert wf.regions == {
        "dgemv": RegionConfig("dgemv", {"m": 300}, {"incx": [1, -2]}, {"a": "uniform"}, {"a": ("lda", "n")}),
        "daxpy": RegionConfig("daxpy"),
    }
    assert wf.root == tmp_path.resolve()


def test_defaults(tmp_path: Path) -> None:
    cfg = load(project(tmp_path, """
        workflows:
          w:
            language: c
            sources: [src/a.f]
    """))
    wf = cfg.workflows["w"]
    assert wf.targets == ["kokkos", "cuda", "triton"]
    assert (wf.sizes, wf.values, wf.inputs, wf.shapes, wf.regions) == ({}, {}, {}, {}, {})
    assert wf.validate == ValidateConfig(trials=3, rtol=None, atol=None)
    assert wf.optimize == OptimizeConfig(budget=0) and not wf.optimize.enabled
    assert wf.agent == AgentConfig(provider="none", model=None, base_url=None, api_key_env="OPENAI_API_KEY")
    assert not wf.agent.enabled
    assert wf.output == "out/w"
    assert wf.preprocess == PreprocessConfig([], {})
    assert wf.cpp_flags() == []


def test_workflow_constructed_directly_gets_default_output() -> None:
    wf = Workflow(name="x", language="c", sources=["a.c"])
    assert wf.output == "out/x" and wf.targets == ["kokkos", "cuda", "triton"]


def test_load_accepts_a_directory_and_a_string(tmp_path: Path) -> None:
    project(tmp_path, "workflows: {w: {language: c, sources: [src/a.f]}}\n")
    assert list(load(tmp_path).workflows) == ["w"]
    assert list(load(str(tmp_path / "workflows.yaml")).workflows) == ["w"]


# ------------------------------------------------------------------ errors


def test_unknown_key_with_suggestion_names_file_line_and_key(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          blas1:
            language: fortran
            sources: [src/a.f]
            sizez: {n: 10}
    """)
    assert errors(path) == [f"{path}:5: workflows.blas1.sizez: unknown key (did you mean 'sizes'?)"]


def test_unknown_key_without_close_match_lists_the_keys(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: c
            sources: [src/a.f]
            validate: {trials: 2, zzz: 1}
    """)
    (msg,) = errors(path)
    assert msg.startswith(f"{path}:5: workflows.w.validate.zzz: unknown key; expected one of: trials, tolerance")


def test_all_errors_collected_each_with_its_line(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortrn
            sources: [src/a.f, src/none*.f]
            targets: [kokkos, trition, kokkos]
            sizes: {n: 1e6, m: true, k: 2.5, ok: 3}
            validate: {trials: 0}
            optimize: {budget: -1, matmul: cublas}
            agent: {provider: anthropic}
            output: ""
            inputs: {a: spd, b: diag_dominat, c: "int:5:1", d: "int:x:y"}
            values: {bad: [[1]], empty: [], map: {a: 1}}
            shapes: {x: 5, y: [";"]}
    """)
    msgs = errors(path)
    expect = [
        ":3: workflows.w.language: unknown language a string ('fortrn') (did you mean 'fortran'?)",
        ":4: workflows.w.sources[1]: glob 'src/none*.f' matches no file",
        ":5: workflows.w.targets[1]: unknown target 'trition' (did you mean 'triton'?)",
        ":5: workflows.w.targets[2]: target 'kokkos' listed twice",
        ":6: workflows.w.sizes.n: expected an integer, got a string ('1e6') (write integers out in full",
        ":6: workflows.w.sizes.m: expected an integer, got a boolean (true)",
        ":6: workflows.w.sizes.k: expected an integer, got a number (2.5)",
        ":7: workflows.w.validate.trials: must be >= 1, got 0",
        ":8: workflows.w.optimize.budget: must be >= 0, got -1",
        ":8: workflows.w.optimize.matmul: unknown matmul choice a string ('cublas')",
        ":9: workflows.w.agent.provider: unknown provider a string ('anthropic')",
        ":10: workflows.w.output: expected a non-empty string",
        ":11: workflows.w.inputs.b: unknown input generator 'diag_dominat' (did you mean 'diag_dominant'?)",
        ":11: workflows.w.inputs.c: 'int:5:1': LO must be <= HI",
        ":11: workflows.w.inputs.d: 'int:x:y': expected int:LO:HI",
        ":12: workflows.w.values.bad[0]: expected a string, number or boolean, got a list",
        ":12: workflows.w.values.empty: expected a value or a non-empty list of values",
        ":12: workflows.w.values.map: expected a value or a list of values, got a mapping",
        ":13: workflows.w.shapes.x: expected a list of extents",
        ":13: workflows.w.shapes.y[0]: expected an extent expression or an integer, got a string (';')",
    ]
    assert len(msgs) == len(expect), "\n".join(msgs)
    for got, want in zip(msgs, expect, strict=True):
        assert got.startswith(str(path) + want), (got, want)
    # one exception carries them all, in file order
    with pytest.raises(ConfigError) as exc:
        load(path)
    assert [i.line for i in exc.value.issues] == sorted(i.line for i in exc.value.issues)  # type: ignore[type-var]


def test_missing_required_keys_and_bad_shapes_of_sections(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            targets: kokkos
          v: [1, 2]
          "bad name": {language: c, sources: [src/a.f]}
    """)
    msgs = errors(path)
    assert f"{path}:2: workflows.w: missing required key 'language'" in msgs
    assert f"{path}:2: workflows.w: missing required key 'sources'" in msgs
    assert any(m.startswith(f"{path}:3: workflows.w.targets: expected a non-empty list of targets") for m in msgs)
    assert f"{path}:4: workflows.v: expected a mapping, got a list" in msgs
    assert any(m.startswith(f"{path}:5: workflows.bad name: workflow names may hold only") for m in msgs)


def test_top_level_errors(tmp_path: Path) -> None:
    path = tmp_path / "workflows.yaml"
    path.write_text("")
    assert errors(path) == [f"{path}: the file is empty; expected a 'workflows:' mapping"]
    path.write_text("workflow:\n  w: {}\n")
    assert errors(path) == [
        f"{path}:1: workflow: unknown key (did you mean 'workflows'?)",
        f"{path}: missing required key 'workflows'",
    ]
    path.write_text("workflows: {}\n")
    assert errors(path) == [f"{path}:1: workflows: no workflows defined"]
    path.write_text("- a\n- b\n")
    assert errors(path) == [f"{path}: expected a mapping, got a list"]


def test_missing_file(tmp_path: Path) -> None:
    assert errors(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: no such file"]
    assert errors(tmp_path) == [f"{tmp_path / 'workflows.yaml'}: no such file"]


def test_bad_yaml_reports_its_line(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: c
            sources: [src/a.f
            targets: [cuda]
    """)
    (msg,) = errors(path)
    assert msg.startswith(f"{path}:5: invalid YAML: ")
    assert "flow sequence that starts on line 4" in msg
    path.write_text("workflows:\n  w:\n\tlanguage: c\n")
    (msg,) = errors(path)
    assert msg.startswith(f"{path}:3: invalid YAML: ") and "\\t" in msg


def test_duplicate_key(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: c
            sources: [src/a.f]
            language: fortran
    """)
    assert errors(path) == [f"{path}:5: workflows.w.language: duplicate key"]


def test_tolerances(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          a: {language: c, sources: [src/a.f], validate: {rtol: 1e-6, atol: 1e-12}}
          b: {language: c, sources: [src/a.f], output: out/b, validate: {tolerance: {atol: 3}}}
    """)
    cfg = load(path)
    # YAML 1.1 reads 1e-6 (no dot) as text; it is still accepted as a number
    assert cfg.workflows["a"].validate == ValidateConfig(3, 1e-6, 1e-12)
    assert cfg.workflows["b"].validate == ValidateConfig(3, None, 3.0)
    path.write_text(textwrap.dedent("""\
        workflows:
          a:
            language: c
            sources: [src/a.f]
            validate: {tolerance: {rtol: 1.0e-6}, rtol: 1.0e-7, atol: -1, }
          b: {language: c, sources: [src/a.f], validate: {tolerance: {rtol: tight}}}
    """))
    msgs = errors(path)
    assert f"{path}:5: workflows.a.validate.rtol: rtol is also given under tolerance; give it in one place" in msgs
    assert f"{path}:5: workflows.a.validate.atol: expected a finite number >= 0, got an integer (-1)" in msgs
    assert f"{path}:6: workflows.b.validate.tolerance.rtol: expected a finite number >= 0, got a string ('tight')" \
        in msgs


def test_agent_checks(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          a:
            language: c
            sources: [src/a.f]
            agent: {provider: openai, base_url: localhost:8000, api_key_env: "sk-123"}
    """)
    msgs = errors(path)
    assert f"{path}:5: workflows.a.agent: missing required key 'model' (needed when provider is openai)" in msgs
    assert any(m.startswith(f"{path}:5: workflows.a.agent.base_url: expected an http") for m in msgs)
    assert any(m.startswith(f"{path}:5: workflows.a.agent.api_key_env: 'sk-123' is not an environment") for m in msgs)


def test_same_name_in_sizes_and_values_of_one_level(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          a:
            language: fortran
            sources: [src/a.f]
            sizes: {n: 10}
            values: {N: [1, 2]}
    """)
    assert errors(path) == [f"{path}:6: workflows.a.values.N: 'N' is also given in sizes; give it in one place"]


def test_same_output_twice(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          a: {language: c, sources: [src/a.f], output: out/x}
          b: {language: c, sources: [src/a.f], output: out/x}
    """)
    assert errors(path) == [f"{path}:3: workflows.b.output: same output folder as workflow 'a'"]


def test_include_folder_must_exist(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          a:
            language: fortran
            sources: [src/a.f]
            preprocess:
              include: [include/]
              defines: {"1BAD": 1, OK: [1]}
    """)
    msgs = errors(path)
    assert msgs[0].startswith(f"{path}:6: workflows.a.preprocess.include[0]: include folder 'include/' does not exist")
    assert msgs[1] == f"{path}:7: workflows.a.preprocess.defines.1BAD: not a valid macro name"
    assert msgs[2] == f"{path}:7: workflows.a.preprocess.defines.OK: expected a value for the macro, got a list"


def test_unknown_workflow_name(tmp_path: Path) -> None:
    cfg = load(project(tmp_path, "workflows: {blas1: {language: c, sources: [src/a.f]}}\n"))
    assert cfg.workflow("blas1").name == "blas1"
    with pytest.raises(ConfigError, match="no such workflow \\(did you mean 'blas1'\\?\\); defined: blas1"):
        cfg.workflow("blas")


# -------------------------------------------------------------------- globs


def test_globs_sorted_deduplicated_recursive(tmp_path: Path) -> None:
    files = ("src/b.f", "src/a.f", "src/sub/c.f90", "src/sub/d.F90", "other/e.f")
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/*.f, src/a.f, "src/**/*.f90", other/e.f]
    """, files)
    (tmp_path / "src" / "dir.f").mkdir()  # a folder that matches is not a source file
    got = load(path).workflows["w"].files()
    root = tmp_path.resolve()
    assert got == sorted(root / f for f in ("src/a.f", "src/b.f", "src/sub/c.f90", "other/e.f"))
    assert got == sorted(got) and len(set(got)) == len(got)


def test_files_raises_when_a_glob_stops_matching(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources:
              - src/a.f
              - src/*.f90
    """)
    wf = load(path).workflows["w"]
    (tmp_path / "src" / "b.f90").unlink()
    with pytest.raises(ConfigError) as exc:
        wf.files()
    assert str(exc.value) == (f"{path.resolve()}:6: workflows.w.sources[1]: glob 'src/*.f90' matches no file "
                              f"under {tmp_path.resolve()}")


# ------------------------------------------------------------ regions, names


def test_region_merging(tmp_path: Path) -> None:
    cfg = load(project(tmp_path, """
        workflows:
          w:
            language: fortran
            sources: [src/a.f]
            sizes: {n: 100, lda: 100}
            values: {incx: [1, -2], trans: N}
            inputs: {a: normal, b: positive}
            shapes: {x: [n]}
            regions:
              DGEMV:
                sizes: {m: 30, incx: 3}
                values: {trans: [N, T], lda: 40}
                inputs: {a: spd}
                shapes: {y: [m]}
    """))
    wf = cfg.workflows["w"]
    r = wf.region("dgemv")
    assert r == wf.region("DGemv")
    assert r.name == "dgemv"
    # the region wins; a name the region pins in sizes drops it from the workflow's values and back
    assert r.sizes == {"n": 100, "m": 30, "incx": 3}
    assert r.values == {"trans": ["N", "T"], "lda": 40}
    assert r.inputs == {"a": "spd", "b": "positive"}
    assert r.shapes == {"x": ("n",), "y": ("m",)}
    assert wf.has_region("DGEMV") and not wf.has_region("daxpy")
    # a routine without its own settings gets the workflow's
    other = wf.region("DAXPY")
    assert other == RegionConfig("daxpy", {"n": 100, "lda": 100}, {"incx": [1, -2], "trans": "N"},
                                 {"a": "normal", "b": "positive"}, {"x": ("n",)})
    # merging never mutates the stored settings
    assert wf.sizes == {"n": 100, "lda": 100} and wf.regions["dgemv"].sizes == {"m": 30, "incx": 3}


def test_fortran_names_case_insensitive_c_and_pytorch_exact(tmp_path: Path) -> None:
    cfg = load(project(tmp_path, """
        workflows:
          f:
            language: fortran
            sources: [src/a.f]
            sizes: {N: 5}
            regions: {DAXPY: {values: {INCX: 2}}}
          c:
            language: c
            sources: [src/a.f]
            sizes: {N: 5, n: 6}
            regions: {Kernel_A: {values: {INCX: 2}}}
          t:
            language: pytorch
            sources: [src/a.f]
            inputs: {layer.weight: uniform}
            regions: {my-model: {}}
    """))
    f, c, t = cfg.workflows["f"], cfg.workflows["c"], cfg.workflows["t"]
    assert f.sizes == {"n": 5} and list(f.regions) == ["daxpy"]
    assert f.region("daxpy").values == {"incx": 2} and f.region("DAXPY").values == {"incx": 2}
    assert c.sizes == {"N": 5, "n": 6} and list(c.regions) == ["Kernel_A"]
    assert c.region("Kernel_A").values == {"INCX": 2}
    assert c.region("kernel_a").values == {}
    assert t.inputs == {"layer.weight": "uniform"} and list(t.regions) == ["my-model"]


def test_fortran_names_that_differ_only_in_case_collide(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          f:
            language: fortran
            sources: [src/a.f]
            sizes: {n: 5, N: 6}
            regions:
              daxpy: {}
              DAXPY: {}
    """)
    msgs = errors(path)
    assert msgs == [
        f"{path}:5: workflows.f.sizes.N: 'N' and 'n' name the same thing (case-insensitive here)",
        f"{path}:8: workflows.f.regions.DAXPY: 'DAXPY' and 'daxpy' name the same thing (case-insensitive here)",
    ]


# ------------------------------------------------------------------ root key


def test_root_key_makes_paths_relative_to_that_folder(tmp_path: Path) -> None:
    ex = tmp_path / "examples" / "ex1"
    (ex / "src").mkdir(parents=True)
    (ex / "src" / "k.f90").write_text("! k\n")
    (ex / "include").mkdir()
    path = tmp_path / "workflows.yaml"
    path.write_text(textwrap.dedent("""\
        workflows:
          ex1_k:
            root: examples/ex1
            language: fortran
            sources: [src/*.f90]
            preprocess: {include: [include]}
          local:
            language: fortran
            sources: [examples/ex1/src/*.f90]
    """))
    cfg = load(path)
    k = cfg.workflows["ex1_k"]
    assert k.root == ex.resolve()
    assert k.files() == [ex.resolve() / "src" / "k.f90"]
    assert k.include_dirs() == [ex.resolve() / "include"]
    assert k.output_dir == ex.resolve() / "out" / "ex1_k"
    assert cfg.workflows["local"].root == tmp_path.resolve()
    assert cfg.workflows["local"].files() == k.files()


def test_root_key_errors(tmp_path: Path) -> None:
    path = project(tmp_path, """
        workflows:
          a:
            root: examples/missing
            language: c
            sources: [src/*.c]
          b:
            root: src
            language: c
            sources: [src/a.f]
    """)
    msgs = errors(path)
    assert msgs[0].startswith(f"{path}:3: workflows.a.root: folder 'examples/missing' does not exist")
    # b's root is src/, so its sources are looked up under src/
    assert msgs[1].startswith(f"{path}:9: workflows.b.sources[0]: glob 'src/a.f' matches no file under")
    assert len(msgs) == 2


# ------------------------------------------------------------- YAML features


def test_anchors_merge_keys_and_extension_keys(tmp_path: Path) -> None:
    path = project(tmp_path, """
        x-common: &common
          language: fortran
          targets: [cuda]
          validate: {trials: 2}
        workflows:
          a:
            <<: *common
            sources: [src/a.f]
          b:
            <<: *common
            sources: [src/b.f90]
            targets: [triton]
    """)
    cfg = load(path)
    assert cfg.workflows["a"].targets == ["cuda"] and cfg.workflows["a"].validate.trials == 2
    assert cfg.workflows["b"].targets == ["triton"] and cfg.workflows["b"].language == "fortran"
    # an error inside the anchor points at the anchor's line
    path.write_text(path.read_text().replace("trials: 2", "trials: two"))
    msgs = errors(path)
    assert msgs[0].startswith(f"{path}:4: workflows.a.validate.trials: expected an integer")


def test_loads_without_a_file_on_disk(tmp_path: Path) -> None:
    (tmp_path / "k.c").write_text("int x;\n")
    cfg = loads("workflows: {w: {language: c, sources: ['*.c']}}\n", tmp_path / "virtual.yaml")
    assert cfg.workflows["w"].files() == [(tmp_path / "k.c").resolve()]


def test_load_cpu_s_is_a_pytorch_setting_of_at_least_one_second(tmp_path: Path) -> None:
    ok = project(tmp_path, """
        workflows:
          m: {language: pytorch, sources: [src/*.py], load_cpu_s: 600}
          d: {language: pytorch, sources: [src/*.py]}
        """, files=("src/m.py",))
    got = load(ok).workflows
    assert got["m"].load_cpu_s == 600 and got["d"].load_cpu_s == 60
    bad = project(tmp_path, """
        workflows:
          f: {language: fortran, sources: [src/*.f], load_cpu_s: 10}
          m: {language: pytorch, sources: [src/*.py], load_cpu_s: 0.5}
        """, files=("src/a.f", "src/m.py"))
    found = "\n".join(errors(bad))
    assert "workflows.f.load_cpu_s: 'load_cpu_s' applies to language: pytorch only" in found
    assert "workflows.m.load_cpu_s: a loader needs at least 1 CPU second, got 0.5" in found
