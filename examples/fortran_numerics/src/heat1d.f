*     heat1d.f -- explicit 1-D heat equation step whose grid spacing and
*     time step live in a COMMON block (set once by HEATIN), as in many
*     older codes.
*
      SUBROUTINE HEATIN(DXIN, DTIN)
      DOUBLE PRECISION DXIN, DTIN
      DOUBLE PRECISION DX, DT
      COMMON /PARAMS/ DX, DT
      DX = DXIN
      DT = DTIN
      RETURN
      END
*
      SUBROUTINE HEAT1D(N, U, UNEW)
*     UNEW := U + DT/DX**2 * (second difference of U) at the interior
*     points 2..N-1; the end points are copied (fixed boundary values).
      INTEGER N
      DOUBLE PRECISION U(N), UNEW(N)
      DOUBLE PRECISION DX, DT
      COMMON /PARAMS/ DX, DT
      DOUBLE PRECISION R
      INTEGER I
*
      IF (N.LT.2) RETURN
      R = DT/(DX*DX)
      UNEW(1) = U(1)
      UNEW(N) = U(N)
      DO 10 I = 2, N - 1
         UNEW(I) = U(I) + R*(U(I-1) - 2.0D0*U(I) + U(I+1))
   10 CONTINUE
      RETURN
      END
