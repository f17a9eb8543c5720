"""A call to a routine whose only effect is output (a debug report) is left out of a
translation that cannot make it, with a note; one that also changes what it is passed is not."""

from __future__ import annotations

from parsers.fortran import parse_source
from translate import ir

SRC = """      subroutine norm2(r, n, rnm2, rnmu)
      integer n, i
      double precision r(n), rnm2, rnmu
      rnm2 = 0
      rnmu = 0
      do i = 1, n
         rnm2 = rnm2 + r(i)**2
         rnmu = max(rnmu, abs(r(i)))
      end do
      end

      subroutine rep(u, n, title, kk)
      integer n, kk
      double precision u(n)
      character*8 title
      double precision rnm2, rnmu
      call norm2(u, n, rnm2, rnmu)
      write(*,7) kk, title, rnm2, rnmu
 7    format(' Level',i2,' in ',a8,': norms =',D21.14,D21.14)
      end

      subroutine bad(u, n, title)
      integer n
      double precision u(n)
      character*8 title
      call norm2(u, n, u(1), u(2))
      write(*,*) title
      end

      subroutine psinv(u, n, dbg)
      integer n, dbg, i
      double precision u(n)
      do i = 1, n
         u(i) = 2 * u(i)
      end do
      if (dbg .ge. 1) call rep(u, n, '   psinv', 1)
      end

      subroutine psbad(u, n, dbg)
      integer n, dbg, i
      double precision u(n)
      do i = 1, n
         u(i) = 2 * u(i)
      end do
      if (dbg .ge. 1) call bad(u, n, '   psinv')
      end
"""


def test_a_debug_report_passed_arrays_is_left_out_with_a_note() -> None:
    got = {k.name: k for k in parse_source(SRC, "t.f", fixed_form=True).kernels}
    ok = got["psinv"]
    assert isinstance(ok, ir.Kernel)
    assert not any(isinstance(n, ir.HostCall) for s in ok.body for n in ir.walk(s))
    assert ok.notes == ("CALL REP at t.f:36 only writes output and cannot stay on the host: the translation does"
                        " not make it",)
    # bad() writes into the array it is passed through norm2's outputs: not output only
    assert isinstance(got["psbad"], ir.Opaque) and "it is passed the array u" in got["psbad"].reason
