*     recurrence.f -- loops whose iterations depend on the previous one.
*     Each carries a value from iteration I-1 to iteration I, so a
*     translator must keep them serial (or recognise a scan).
*
*     PSUM    inclusive prefix sum         X(I) = X(I-1) + Y(I)
*     LINREC  first-order linear recurrence X(I) = A(I)*X(I-1) + B(I)
*     TRIDAG  tridiagonal solve by the Thomas algorithm: a forward
*             elimination sweep and a backward substitution (step -1)
*
************************************************************************
      SUBROUTINE PSUM(N, Y, X)
      INTEGER N
      DOUBLE PRECISION Y(N), X(N)
      INTEGER I
*
      IF (N.LE.0) RETURN
      X(1) = Y(1)
      DO 10 I = 2, N
         X(I) = X(I-1) + Y(I)
   10 CONTINUE
      RETURN
      END
*
************************************************************************
      SUBROUTINE LINREC(N, A, B, X)
      INTEGER N
      DOUBLE PRECISION A(N), B(N), X(N)
      INTEGER I
*
      IF (N.LE.0) RETURN
      X(1) = B(1)
      DO 10 I = 2, N
         X(I) = A(I)*X(I-1) + B(I)
   10 CONTINUE
      RETURN
      END
*
************************************************************************
      SUBROUTINE TRIDAG(N, A, B, C, D, X, CP, DP)
*     Solves the tridiagonal system
*        A(I)*X(I-1) + B(I)*X(I) + C(I)*X(I+1) = D(I),   I = 1..N
*     (A(1) and C(N) are not used). CP and DP are work arrays of
*     length N. No pivoting: B must dominate the diagonal.
      INTEGER N
      DOUBLE PRECISION A(N), B(N), C(N), D(N), X(N), CP(N), DP(N)
      DOUBLE PRECISION DENOM
      INTEGER I
*
      IF (N.LE.0) RETURN
      CP(1) = C(1)/B(1)
      DP(1) = D(1)/B(1)
      DO 10 I = 2, N
         DENOM = B(I) - A(I)*CP(I-1)
         CP(I) = C(I)/DENOM
         DP(I) = (D(I) - A(I)*DP(I-1))/DENOM
   10 CONTINUE
      X(N) = DP(N)
      DO 20 I = N - 1, 1, -1
         X(I) = DP(I) - CP(I)*X(I+1)
   20 CONTINUE
      RETURN
      END
