C     Hand-written routines for the validation tests.
      SUBROUTINE DAXPY(N, DA, DX, INCX, DY, INCY)
      INTEGER N, INCX, INCY
      DOUBLE PRECISION DA, DX(*), DY(*)
      INTEGER I, IX, IY
      IF (N .LE. 0) RETURN
      IF (DA .EQ. 0.0D0) RETURN
      IX = 1
      IY = 1
      IF (INCX .LT. 0) IX = (-N+1)*INCX + 1
      IF (INCY .LT. 0) IY = (-N+1)*INCY + 1
      DO 10 I = 1, N
         DY(IY) = DY(IY) + DA*DX(IX)
         IX = IX + INCX
         IY = IY + INCY
   10 CONTINUE
      RETURN
      END

      DOUBLE PRECISION FUNCTION DDOT(N, DX, INCX, DY, INCY)
      INTEGER N, INCX, INCY
      DOUBLE PRECISION DX(*), DY(*)
      INTEGER I, IX, IY
      DDOT = 0.0D0
      IF (N .LE. 0) RETURN
      IX = 1
      IY = 1
      IF (INCX .LT. 0) IX = (-N+1)*INCX + 1
      IF (INCY .LT. 0) IY = (-N+1)*INCY + 1
      DO 10 I = 1, N
         DDOT = DDOT + DX(IX)*DY(IY)
         IX = IX + INCX
         IY = IY + INCY
   10 CONTINUE
      RETURN
      END

C     Five-point stencil on a padded grid A(0:N+1, 0:M+1) stored with
C     leading dimension LDA >= N+2; result B(LDB, M), LDB >= N.
      SUBROUTINE STENCIL(N, M, A, LDA, B, LDB)
      INTEGER N, M, LDA, LDB
      DOUBLE PRECISION A(0:LDA-1, 0:M+1), B(LDB, M)
      INTEGER I, J
      DO 20 J = 1, M
         DO 10 I = 1, N
            B(I,J) = 0.25D0*(A(I-1,J) + A(I+1,J) + A(I,J-1)
     $             + A(I,J+1)) - A(I,J)
   10    CONTINUE
   20 CONTINUE
      END

C     Scales X by ALPHA from a COMMON block and leaves the sum in TOTAL.
      SUBROUTINE SCALE(N, X)
      INTEGER N
      DOUBLE PRECISION X(N)
      DOUBLE PRECISION ALPHA, TOTAL
      COMMON /PARAMS/ ALPHA, TOTAL
      INTEGER I
      TOTAL = 0.0D0
      DO 10 I = 1, N
         X(I) = ALPHA*X(I)
         TOTAL = TOTAL + X(I)
   10 CONTINUE
      END

C     Y := A*X (TRANS = 'N') or Y := A**T*X (TRANS = 'T'); A is M by N.
      SUBROUTINE MATVEC(TRANS, M, N, A, LDA, X, Y)
      CHARACTER*1 TRANS
      INTEGER M, N, LDA
      DOUBLE PRECISION A(LDA, *), X(*), Y(*)
      LOGICAL LSAME
      EXTERNAL LSAME, XERBLA
      INTEGER I, J
      DOUBLE PRECISION T
      IF (.NOT. LSAME(TRANS, 'N') .AND. .NOT. LSAME(TRANS, 'T')) THEN
         CALL XERBLA('MATVEC', 1)
         RETURN
      END IF
      IF (LSAME(TRANS, 'N')) THEN
         DO 20 I = 1, M
            T = 0.0D0
            DO 10 J = 1, N
               T = T + A(I,J)*X(J)
   10       CONTINUE
            Y(I) = T
   20    CONTINUE
      ELSE
         DO 40 J = 1, N
            T = 0.0D0
            DO 30 I = 1, M
               T = T + A(I,J)*X(I)
   30       CONTINUE
            Y(J) = T
   40    CONTINUE
      END IF
      END

C     Y = SQRT(X): NaN on the default (normal) inputs.
      SUBROUTINE VSQRT(N, X, Y)
      INTEGER N
      DOUBLE PRECISION X(N), Y(N)
      INTEGER I
      DO 10 I = 1, N
         Y(I) = SQRT(X(I))
   10 CONTINUE
      END
