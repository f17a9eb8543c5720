"""COMPLEX in the frontend: arrays as real arrays of interleaved parts (a leading dimension of
extent 2), scalars as two reals, arithmetic and intrinsics on the parts. Each routine is run
through its lowered IR against numpy's complex arithmetic, the gfortran reference is built for
one and compared with numpy, and what is not lowered is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parsers.fortran import parse_source
from tests.test_fortran_f90 import loops, run
from tests.test_reference_build import kernels, needs_f2py, write
from translate import ir
from validation import runners

FFTZ2 = """      subroutine fftz2 (is, l, m, n, ny, ny1, u, x, y)
      implicit none
      integer is,k,l,m,n,ny,ny1,n1,li,lj,lk,ku,i,j,i11,i12,i21,i22
      double complex u,x,y,u1,x11,x21
      dimension u(n), x(ny1,n), y(ny1,n)
      n1 = n / 2
      lk = 2 ** (l - 1)
      li = 2 ** (m - l)
      lj = 2 * lk
      ku = li + 1
      do i = 0, li - 1
        i11 = i * lk + 1
        i12 = i11 + n1
        i21 = i * lj + 1
        i22 = i21 + lk
        if (is .ge. 1) then
          u1 = u(ku+i)
        else
          u1 = dconjg (u(ku+i))
        endif
        do k = 0, lk - 1
          do j = 1, ny
            x11 = x(j,i11+k)
            x21 = x(j,i12+k)
            y(j,i21+k) = x11 + x21
            y(j,i22+k) = u1 * (x11 - x21)
          enddo
        enddo
      enddo
      return
      end
"""

CSUM = """      subroutine csum(n, x, s, t, w)
      integer n, i
      complex*16 x(n), c
      complex(kind=8) w(n)
      double precision s, t
      c = (0.0d0, -0.0d0)
      do i = 1, n
         c = c + x(i) * dcmplx(1.0d0, dble(i)) / 2.0d0
         w(i) = exp(x(i)) - (x(i) + (1.0d0, 2.0d0)) ** 2
      end do
      s = dble(c)
      t = abs(c) + dimag(c)
      write(*, *) 'sum', c
      end
"""


def parts(z: np.ndarray) -> np.ndarray:
    """A complex array as the translation sees it: real, Fortran order, parts leading."""
    out = np.empty((2, *z.shape), order="F")
    out[0], out[1] = z.real, z.imag
    return out


def cplx(a: np.ndarray) -> np.ndarray:
    return a[0] + 1j * a[1]


def lower(src: str) -> dict[str, ir.Kernel | ir.Opaque]:
    return {k.name: k for k in parse_source(src, "t.f", fixed_form=True).kernels}


def fftz2_model(is_: int, lev: int, m: int, n: int, ny: int, u: np.ndarray, x: np.ndarray,
                y: np.ndarray) -> np.ndarray:
    y = y.copy()
    n1, lk, li = n // 2, 2 ** (lev - 1), 2 ** (m - lev)
    lj, ku = 2 * lk, li + 1
    for i in range(li):
        i11, i21 = i * lk + 1, i * lj + 1
        i12, i22 = i11 + n1, i21 + lk
        u1 = u[ku + i - 1] if is_ >= 1 else np.conj(u[ku + i - 1])
        for k in range(lk):
            for j in range(ny):
                x11, x21 = x[j, i11 + k - 1], x[j, i12 + k - 1]
                y[j, i21 + k - 1] = x11 + x21
                y[j, i22 + k - 1] = u1 * (x11 - x21)
    return y


def test_complex_arrays_are_interleaved_parts_and_the_butterfly_matches_numpy() -> None:
    k = lower(FFTZ2)["fftz2"]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    x_param = next(p for p in k.params if p.name == "x")
    assert isinstance(x_param, ir.Array) and x_param.complex and x_param.shape[0] == ir.Const(2, ir.DType.I32)
    rng = np.random.default_rng(2)
    n, ny, ny1, m = 16, 3, 4, 4
    u = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    x = np.asfortranarray(rng.standard_normal((ny1, n)) + 1j * rng.standard_normal((ny1, n)))
    for is_, lev in ((1, 1), (-1, 2), (1, 4)):
        y = np.zeros((ny1, n), dtype=complex, order="F")
        out = run(k, {"is": is_, "l": lev, "m": m, "n": n, "ny": ny, "ny1": ny1},
                  {"u": parts(u), "x": parts(x), "y": parts(y)})
        np.testing.assert_allclose(cplx(out["y"]), fftz2_model(is_, lev, m, n, ny, u, x, y), rtol=1e-14)


def test_complex_scalars_reduce_print_and_give_their_parts() -> None:
    k = lower(CSUM)["csum"]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    assert {"c_re", "c_im"} <= {d.name for d in k.locals}
    printed = [n for s in k.body for n in ir.walk(s) if isinstance(n, ir.HostCall) and n.kind == "print"]
    assert len(printed[0].args) == 3  # the text, then both parts of c
    rng = np.random.default_rng(4)
    n = 7
    x = rng.standard_normal(n) * 0.5 + 1j * rng.standard_normal(n) * 0.5
    out = run(k, {"n": n}, {"x": parts(x), "w": parts(np.zeros(n, dtype=complex))})
    c = np.sum(x * (1.0 + 1j * np.arange(1, n + 1)) / 2.0)
    assert np.isclose(out["s"], c.real, rtol=1e-14) and np.isclose(out["t"], abs(c) + c.imag, rtol=1e-14)
    np.testing.assert_allclose(cplx(out["w"]), np.exp(x) - (x + (1 + 2j)) ** 2, rtol=1e-13)
    assert [lp.kind for lp in loops(k)] == [ir.LoopKind.PARALLEL]  # two real sums


def test_what_is_not_lowered_is_refused() -> None:
    got = lower("""      subroutine cscal(n, a, x)
      integer n, i
      complex*16 a, x(n)
      do i = 1, n
         x(i) = a * x(i)
      end do
      end

      subroutine czero(n, x)
      integer n
      complex*16 x(n)
      x = (0.0d0, 0.0d0)
      end

      subroutine ccmp(n, x, k)
      integer n, i, k
      complex*16 x(n)
      k = 0
      do i = 1, n
         if (x(i) .eq. x(1)) k = k + 1
      end do
      end
""")
    assert got["cscal"].reason == "COMPLEX scalar a at t.f:5 (an argument or global) cannot be lowered"
    assert got["czero"].reason.startswith("COMPLEX array assignment to x at t.f:12")
    assert got["ccmp"].reason.startswith("COMPLEX x(...) at t.f:20 where a real value is needed")


@needs_f2py
def test_the_reference_takes_complex_arrays_as_interleaved_parts(tmp_path: Path) -> None:
    paths = write(tmp_path, {"cx.f": FFTZ2 + "\n" + CSUM})
    ks = kernels(paths, tmp_path)
    build = runners.build_reference(paths, list(ks.values()), tmp_path, cache_dir=tmp_path / "cache")
    assert build.ok and not build.failed, build.reason + build.log
    from validation.inputs import make_case

    case = make_case(ks["csum"], {"n": 5}, {}, {}, 3)
    r = runners.run_reference(build, ks["csum"], case, tmp_path / "work")
    assert r.ok, r.reason + r.log
    x = cplx(case.arrays["x"].reshape((2, 5), order="F"))
    c = np.sum(x * (1.0 + 1j * np.arange(1, 6)) / 2.0)
    assert np.isclose(float(r.outputs["s"]), c.real, rtol=1e-13)
    w = cplx(np.asarray(r.outputs["w"]).reshape((2, 5), order="F"))
    np.testing.assert_allclose(w, np.exp(x) - (x + (1 + 2j)) ** 2, rtol=1e-12)


def test_division_by_a_complex_value_and_a_complex_assigned_to_an_integer() -> None:
    k = lower("""      subroutine cdiv(n, x, y, m)
      integer n, i, m
      complex*16 x(n), y(n)
      m = y(1)
      do i = 1, n
         x(i) = x(i) / y(i)
      end do
      end
""")["cdiv"]
    assert isinstance(k, ir.Kernel), getattr(k, "reason", k)
    rng = np.random.default_rng(8)
    x = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    y = np.array([3.5 + 0.1j, 0.1 + 3j, -2 - 2j, 1e-3 + 5j, -7 + 1e-4j, 1 + 1j])
    out = run(k, {"n": 6}, {"x": parts(x), "y": parts(y)})
    np.testing.assert_allclose(cplx(out["x"]), x / y, rtol=1e-15)
    assert out["m"] == 3  # the real part, truncated
