"""validation.timing and validation.ceilings: the timers (on a fake clock, a fake torch
and real sleeps), CPU ceilings at tiny sizes, the cache, ``translate doctor --measure``,
the FMA kernel in the Triton interpreter, and the GPU path (``gpu`` marker)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from graph.cli import main
from validation import ceilings as ce
from validation.timing import Timing, time_cpu, time_gpu

TINY = {"copy_bytes": 1 << 16, "gemm_n": 16, "min_time_s": 0.0}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KT_CACHE_DIR", str(tmp_path / "kt"))
    return tmp_path / "kt"


@pytest.fixture
def tiny_cpu(monkeypatch: pytest.MonkeyPatch) -> list[ce.Ceilings]:
    """measure_cpu at tiny sizes; the list collects every measurement."""
    made: list[ce.Ceilings] = []

    def measure(**_: Any) -> ce.Ceilings:
        made.append(real(**TINY))
        return made[-1]

    real = ce.measure_cpu
    monkeypatch.setattr(ce, "measure_cpu", measure)
    return made


def fake_clock(durations: list[float]) -> Callable[[], float]:
    """A clock whose consecutive (start, stop) readings are ``durations`` apart."""
    def ticks() -> Iterator[float]:
        now = 100.0
        for d in durations:
            yield now
            now += d
            yield now
    it = ticks()
    return lambda: next(it)


SAMPLE = ce.Ceilings("NVIDIA H200", 4147.0, 60000.0, 30000.0, 50700.0, 60000.0, "2026-12-02T00:00:00+00:00", "test")


# ------------------------------------------------------------------ timing


def test_time_cpu_median_and_min_on_fake_clock() -> None:
    calls: list[int] = []
    t = time_cpu(lambda: calls.append(1), warmup=2, reps=5, min_time_s=0.0, clock=fake_clock([3, 1, 2, 5, 4]))
    assert t == Timing(median_s=3.0, min_s=1.0, runs=5)
    assert len(calls) == 7  # warm-up runs are not timed


def test_time_cpu_runs_until_min_time() -> None:
    t = time_cpu(lambda: None, warmup=0, reps=2, min_time_s=1.0, clock=fake_clock([0.25] * 10))
    assert t.runs == 4 and t.median_s == 0.25
    capped = time_cpu(lambda: None, warmup=0, reps=2, min_time_s=1.0, max_reps=6, clock=fake_clock([0.0] * 10))
    assert capped.runs == 6


def test_time_cpu_sleep() -> None:
    t = time_cpu(lambda: time.sleep(0.01), warmup=0, reps=3, min_time_s=0.0)
    assert t.runs == 3 and 0.01 <= t.min_s <= t.median_s < 0.5


def test_timing_needs_runs() -> None:
    with pytest.raises(ValueError):
        Timing.of([])
    with pytest.raises(ValueError):
        time_cpu(lambda: None, reps=0)


def test_time_gpu_on_fake_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run: L2 flush, then start event, fn, end event; median of the event times."""
    log: list[str] = []

    class Event:
        count = 0

        def __init__(self, enable_timing: bool) -> None:
            assert enable_timing
            self.at = 0.0

        def record(self) -> None:
            log.append("record")
            Event.count += 1
            self.at = float(Event.count ** 2)  # ms; the runs take 3, 7, 11 ms

        def elapsed_time(self, end: Event) -> float:
            return end.at - self.at

    flush = SimpleNamespace(zero_=lambda: log.append("flush"))
    cuda = SimpleNamespace(Event=Event, synchronize=lambda: log.append("sync"))
    fake = SimpleNamespace(cuda=cuda, int32="int32", empty=lambda n, dtype, device: flush)
    monkeypatch.setitem(sys.modules, "torch", fake)
    t = time_gpu(lambda: log.append("fn"), warmup=2, reps=3)
    assert t == Timing(median_s=0.007, min_s=0.003, runs=3)
    assert log == ["fn", "fn", "sync"] + ["flush", "record", "fn", "record"] * 3 + ["sync"]
    log.clear()
    time_gpu(lambda: log.append("fn"), warmup=0, reps=1, flush_l2=False)
    assert "flush" not in log


# ---------------------------------------------------------------- ceilings


def test_measure_cpu_tiny() -> None:
    c = ce.measure_cpu(**TINY)
    assert c.device.startswith("cpu:") and c.device == ce.device_name("cpu")
    assert min(c.copy_gbps, c.fp32_gflops, c.fp64_gflops, c.gemm_fp32_gflops, c.gemm_fp64_gflops) > 0
    assert (c.fp32_gflops, c.fp64_gflops) == (c.gemm_fp32_gflops, c.gemm_fp64_gflops)
    assert datetime.fromisoformat(c.measured_at).tzinfo is not None
    assert "matmul 16^3" in c.method


def test_json_round_trip() -> None:
    assert ce.Ceilings.from_json(SAMPLE.to_json()) == SAMPLE
    older = '{"device": "x", "copy_gbps": 1, "fp32_gflops": 2, "fp64_gflops": 3, "gemm_fp32_gflops": 4,' \
            ' "gemm_fp64_gflops": 5, "measured_at": "t", "later_field": 1}'
    assert ce.Ceilings.from_json(older) == ce.Ceilings("x", 1, 2, 3, 4, 5, "t")
    for bad in ('{"device": "x"}', "[1, 2]", "not json"):
        with pytest.raises(ValueError):
            ce.Ceilings.from_json(bad)


def test_cache_round_trip(cache: Path) -> None:
    assert ce.cache_dir() == cache
    assert ce.load_cached(SAMPLE.device) is None
    path = ce.save(SAMPLE)
    assert path == cache / "ceilings-nvidia-h200.json" == ce.cache_path("NVIDIA H200")
    assert ce.load_cached("NVIDIA H200") == SAMPLE
    assert list(cache.iterdir()) == [path]  # no temporary file left behind
    path.write_text("{broken")
    assert ce.load_cached("NVIDIA H200") is None
    path.write_text(ce.Ceilings("nvidia h200", *[1.0] * 5, "t").to_json())  # same slug, other device
    assert ce.load_cached("NVIDIA H200") is None


def test_cache_dir_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KT_CACHE_DIR", raising=False)
    monkeypatch.delenv("KT_CACHE", raising=False)
    assert ce.cache_dir() == Path.home() / ".cache" / "kernel-translate"
    assert ce.slug("cpu:AMD EPYC 9654 x192") == "cpu-amd-epyc-9654-x192"


def test_load_or_measure_caches(cache: Path, tiny_cpu: list[ce.Ceilings]) -> None:
    first = ce.load_or_measure(device="cpu")
    assert tiny_cpu == [first] and ce.cache_path(first.device).exists()
    assert ce.load_or_measure(device="cpu") == first and len(tiny_cpu) == 1
    again = ce.load_or_measure(remeasure=True, device="cpu")
    assert len(tiny_cpu) == 2 and ce.load_cached(first.device) == again


def test_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ce, "_cuda_available", lambda: False)
    assert ce.resolve("auto") == ce.resolve("cpu") == "cpu"
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        ce.resolve("gpu")
    with pytest.raises(ValueError):
        ce.resolve("tpu")
    monkeypatch.setattr(ce, "_cuda_available", lambda: True)
    assert ce.resolve("auto") == ce.resolve("gpu") == "gpu"
    assert ce.resolve("cpu") == "cpu"


def test_format_ceilings() -> None:
    text = ce.format_ceilings(SAMPLE, Path("/c/ceilings-nvidia-h200.json"))
    assert text.splitlines()[0] == "ceilings of NVIDIA H200 (measured 2026-12-02T00:00:00+00:00)"
    assert "  copy            4,147.0  GB/s (read + written)" in text
    assert "gemm fp32" in text and text.endswith("cached in /c/ceilings-nvidia-h200.json")


def test_fma_kernel_in_interpreter() -> None:
    """The FMA kernel's arithmetic, run by the Triton interpreter (the GPU build is the gpu test's)."""
    torch = pytest.importorskip("torch")
    from triton.runtime.interpreter import InterpretedFunction

    from validation.fma_kernel import fma_chains

    x = torch.rand(3 * 16, dtype=torch.float64)
    bc = torch.tensor([0.75, 0.125], dtype=torch.float64)
    out = torch.empty_like(x)
    InterpretedFunction(fma_chains.fn)[(3,)](x, bc, out, 2, BLOCK=16, UNROLL=ce.FMA_UNROLL)
    chains = [x.numpy(), x.numpy() + 0.125, x.numpy() - 0.125, x.numpy() * 0.75]
    for _ in range(2 * ce.FMA_UNROLL):
        chains = [a * 0.75 + 0.125 for a in chains]
    np.testing.assert_allclose(out.numpy(), (chains[0] + chains[1]) + (chains[2] + chains[3]), rtol=1e-12)


def test_measure_gpu_on_fake_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """measure_gpu's wiring: which number goes where, and TF32 off only while timing GEMMs."""
    matmul = SimpleNamespace(allow_tf32=True)
    seen: list[tuple[str, Any, bool]] = []
    fake = SimpleNamespace(
        float32="f32", float64="f64", __version__="fake",
        backends=SimpleNamespace(cuda=SimpleNamespace(matmul=matmul)),
        cuda=SimpleNamespace(current_device=lambda: 0, empty_cache=lambda: None,
                             get_device_properties=lambda i: SimpleNamespace(multi_processor_count=132)))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(ce, "device_name", lambda kind: f"fake-{kind}")
    monkeypatch.setattr(ce, "_gpu_copy_gbps", lambda nbytes, reps: 4000.0)
    monkeypatch.setattr(ce, "_gpu_fma_gflops", lambda dt, programs, block, iters, reps:
                        seen.append(("fma", (dt, programs, block), matmul.allow_tf32)) or {"f32": 6e4, "f64": 3e4}[dt])
    monkeypatch.setattr(ce, "_gpu_gemm_gflops", lambda dt, n, reps:
                        seen.append(("gemm", dt, matmul.allow_tf32)) or {"f32": 50e3, "f64": 55e3}[dt])
    c = ce.measure_gpu()
    assert (c.device, c.copy_gbps, c.fp32_gflops, c.fp64_gflops) == ("fake-gpu", 4000.0, 6e4, 3e4)
    assert (c.gemm_fp32_gflops, c.gemm_fp64_gflops) == (50e3, 55e3)
    assert seen[0] == ("fma", ("f32", 132 * 8, 256), True)
    assert ("gemm", "f32", False) in seen and ("gemm", "f64", False) in seen
    assert matmul.allow_tf32 is True  # restored


# --------------------------------------------------------------------- CLI


def test_doctor_measure(cache: Path, tiny_cpu: list[ce.Ceilings], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--cpu"]) == 0
    out = capsys.readouterr().out
    assert "reference (Fortran):" in out  # the toolchain report is still there
    assert "not measured; run `translate doctor --measure --cpu`" in out and str(cache) in out
    assert main(["doctor", "--measure", "--cpu"]) == 0
    out = capsys.readouterr().out
    name = ce.device_name("cpu")
    assert f"ceilings of {name} (measured " in out and "GB/s" in out and "GFLOP/s" in out
    assert f"cached in {ce.cache_path(name)}" in out and ce.cache_path(name).exists()
    assert main(["doctor", "--cpu"]) == 0 and main(["doctor", "--measure", "--cpu"]) == 0
    assert capsys.readouterr().out.count(f"ceilings of {name} (measured ") == 2
    assert len(tiny_cpu) == 1  # measured once, then read from the cache


def test_doctor_gpu_without_gpu(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ce, "_cuda_available", lambda: False)
    assert main(["doctor", "--measure", "--gpu"]) == 1
    assert "no CUDA GPU" in capsys.readouterr().err


# --------------------------------------------------------------------- GPU


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.gpu
def test_gpu_ceilings(cache: Path) -> None:
    if not _cuda():
        pytest.skip("no CUDA GPU")
    import torch

    x = torch.ones(1 << 20, device="cuda")
    t = time_gpu(lambda: x.mul_(1.0), warmup=1, reps=5)
    assert t.runs == 5 and 0 < t.min_s <= t.median_s
    tf32 = torch.backends.cuda.matmul.allow_tf32
    c = ce.measure_gpu(copy_bytes=64 << 20, gemm_n=512, fma_iters=16, reps=3)
    assert torch.backends.cuda.matmul.allow_tf32 == tf32  # restored
    assert c.device == torch.cuda.get_device_name() == ce.device_name(ce.resolve("auto"))
    assert min(c.copy_gbps, c.fp32_gflops, c.fp64_gflops, c.gemm_fp32_gflops, c.gemm_fp64_gflops) > 0
    ce.save(c)
    assert ce.load_cached(c.device) == c
