*     search.f -- a search written as the classic FORTRAN 77 GO TO loop.
*     The backward GO TO becomes a WHILE loop and the forward one a flag
*     that skips what it jumps over; the search runs serial.
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
