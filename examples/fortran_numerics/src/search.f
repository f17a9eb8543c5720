*     search.f -- a search written as the classic FORTRAN 77 GO TO loop.
*     The translator has no structured loop to work with here and is
*     expected to report the routine unsupported (an Opaque region).
*
      INTEGER FUNCTION IFIRST(N, X, T)
*     Index of the first X(I) greater than T, or N+1 when there is none.
      INTEGER N
      DOUBLE PRECISION X(*), T
      INTEGER I
*
      I = 0
   10 CONTINUE
      I = I + 1
      IF (I.GT.N) GO TO 20
      IF (X(I).LE.T) GO TO 10
      IFIRST = I
      RETURN
   20 IFIRST = N + 1
      RETURN
      END
