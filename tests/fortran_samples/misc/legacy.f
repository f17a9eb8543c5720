      SUBROUTINE JUMPY(N, X)
      INTEGER N
      REAL X(N)
      INTEGER I
      DO 10 I = 1, N
         IF (X(I) .LT. 0.0) GO TO 20
         X(I) = SQRT(X(I))
   10 CONTINUE
   20 CONTINUE
      RETURN
      END

      SUBROUTINE SHARED(N, M, A)
      INTEGER N, M
      DOUBLE PRECISION A(N, M)
      DO 10 J = 1, M
      DO 10 I = 1, N
         A(I, J) = DBLE(I) * 2 + J
   10 CONTINUE
      END

      SUBROUTINE USECOM(N, X)
      INTEGER N
      DOUBLE PRECISION X(N)
      DOUBLE PRECISION ALPHA, W
      COMMON /PARAMS/ ALPHA, W(100)
      DO 10 I = 1, N
         X(I) = ALPHA * X(I) + W(I)
   10 CONTINUE
      ALPHA = ALPHA + 1.0D0
      END

      SUBROUTINE PRINTER(N)
      INTEGER N
      PRINT *, N
      END

      DOUBLE PRECISION FUNCTION SQR(X)
      DOUBLE PRECISION X
      SQR = X * X
      END

      SUBROUTINE SQUARES(N, X, Y)
      INTEGER N
      DOUBLE PRECISION X(N), Y(N), SQR
      EXTERNAL SQR
      DO 10 I = 1, N
         Y(I) = SQR(X(I)) + 1.0D0
   10 CONTINUE
      END

      SUBROUTINE CALLER(N, X)
      INTEGER N
      DOUBLE PRECISION X(N)
      CALL PRINTER(N)
      END

      SUBROUTINE EXTCALL(N, X)
      INTEGER N
      DOUBLE PRECISION X(N)
      CALL DOESNOTEXIST(N, X)
      END
