*     blas1.f -- level-1 vector kernels in the style of the reference
*     BLAS, written for the kernel-translate examples.
*
*     The calling conventions follow the reference BLAS: a length N,
*     vectors passed with their increments INCX/INCY, a negative
*     increment walking the vector from its far end, quick returns on
*     empty input, and unit-stride branches unrolled with a clean-up
*     loop sized by MOD.
*
*     VAXPY   DY := DA*DX + DY                     (inout vector)
*     VDOT    DX . DY                              (sum reduction)
*     VSCAL   DX := DA*DX                          (run-time DO step)
*     VASUM   sum of |DX(I)|                       (sum reduction)
*     VNRM2   sqrt(sum of DX(I)**2)                (then a sqrt)
*     VAMAX   max of |DX(I)|                       (max reduction)
*     IVAMAX  first index of max |DX(I)|           (argmax)
*     VCOPY   DY := DX
*     VSWAP   DX <-> DY
*
************************************************************************
      SUBROUTINE VAXPY(N, DA, DX, INCX, DY, INCY)
      INTEGER N, INCX, INCY
      DOUBLE PRECISION DA
      DOUBLE PRECISION DX(*), DY(*)
      INTEGER I, IX, IY, M, MP1
      INTRINSIC MOD
*
      IF (N.LE.0) RETURN
      IF (DA.EQ.0.0D0) RETURN
      IF (INCX.EQ.1 .AND. INCY.EQ.1) THEN
*        Unit strides: a clean-up loop, then unrolled by 4.
         M = MOD(N, 4)
         IF (M.NE.0) THEN
            DO 10 I = 1, M
               DY(I) = DY(I) + DA*DX(I)
   10       CONTINUE
         END IF
         IF (N.LT.4) RETURN
         MP1 = M + 1
         DO 20 I = MP1, N, 4
            DY(I) = DY(I) + DA*DX(I)
            DY(I+1) = DY(I+1) + DA*DX(I+1)
            DY(I+2) = DY(I+2) + DA*DX(I+2)
            DY(I+3) = DY(I+3) + DA*DX(I+3)
   20    CONTINUE
      ELSE
*        Unequal or non-unit strides.
         IX = 1
         IY = 1
         IF (INCX.LT.0) IX = (-N+1)*INCX + 1
         IF (INCY.LT.0) IY = (-N+1)*INCY + 1
         DO 30 I = 1, N
            DY(IY) = DY(IY) + DA*DX(IX)
            IX = IX + INCX
            IY = IY + INCY
   30    CONTINUE
      END IF
      RETURN
      END
*
************************************************************************
      DOUBLE PRECISION FUNCTION VDOT(N, DX, INCX, DY, INCY)
      INTEGER N, INCX, INCY
      DOUBLE PRECISION DX(*), DY(*)
      DOUBLE PRECISION DTEMP
      INTEGER I, IX, IY, M, MP1
      INTRINSIC MOD
*
      VDOT = 0.0D0
      DTEMP = 0.0D0
      IF (N.LE.0) RETURN
      IF (INCX.EQ.1 .AND. INCY.EQ.1) THEN
         M = MOD(N, 5)
         IF (M.NE.0) THEN
            DO 10 I = 1, M
               DTEMP = DTEMP + DX(I)*DY(I)
   10       CONTINUE
            IF (N.LT.5) THEN
               VDOT = DTEMP
               RETURN
            END IF
         END IF
         MP1 = M + 1
         DO 20 I = MP1, N, 5
            DTEMP = DTEMP + DX(I)*DY(I) + DX(I+1)*DY(I+1) +
     $              DX(I+2)*DY(I+2) + DX(I+3)*DY(I+3) +
     $              DX(I+4)*DY(I+4)
   20    CONTINUE
      ELSE
         IX = 1
         IY = 1
         IF (INCX.LT.0) IX = (-N+1)*INCX + 1
         IF (INCY.LT.0) IY = (-N+1)*INCY + 1
         DO 30 I = 1, N
            DTEMP = DTEMP + DX(IX)*DY(IY)
            IX = IX + INCX
            IY = IY + INCY
   30    CONTINUE
      END IF
      VDOT = DTEMP
      RETURN
      END
*
************************************************************************
      SUBROUTINE VSCAL(N, DA, DX, INCX)
      INTEGER N, INCX
      DOUBLE PRECISION DA
      DOUBLE PRECISION DX(*)
      INTEGER I, M, MP1, NINCX
      INTRINSIC MOD
*
      IF (N.LE.0 .OR. INCX.LE.0) RETURN
      IF (INCX.EQ.1) THEN
         M = MOD(N, 5)
         IF (M.NE.0) THEN
            DO 10 I = 1, M
               DX(I) = DA*DX(I)
   10       CONTINUE
            IF (N.LT.5) RETURN
         END IF
         MP1 = M + 1
         DO 20 I = MP1, N, 5
            DX(I) = DA*DX(I)
            DX(I+1) = DA*DX(I+1)
            DX(I+2) = DA*DX(I+2)
            DX(I+3) = DA*DX(I+3)
            DX(I+4) = DA*DX(I+4)
   20    CONTINUE
      ELSE
*        The step of this loop is the run-time increment.
         NINCX = N*INCX
         DO 30 I = 1, NINCX, INCX
            DX(I) = DA*DX(I)
   30    CONTINUE
      END IF
      RETURN
      END
*
************************************************************************
      DOUBLE PRECISION FUNCTION VASUM(N, DX, INCX)
      INTEGER N, INCX
      DOUBLE PRECISION DX(*)
      DOUBLE PRECISION DTEMP
      INTEGER I, M, MP1, NINCX
      INTRINSIC DABS, MOD
*
      VASUM = 0.0D0
      DTEMP = 0.0D0
      IF (N.LE.0 .OR. INCX.LE.0) RETURN
      IF (INCX.EQ.1) THEN
         M = MOD(N, 6)
         IF (M.NE.0) THEN
            DO 10 I = 1, M
               DTEMP = DTEMP + DABS(DX(I))
   10       CONTINUE
            IF (N.LT.6) THEN
               VASUM = DTEMP
               RETURN
            END IF
         END IF
         MP1 = M + 1
         DO 20 I = MP1, N, 6
            DTEMP = DTEMP + DABS(DX(I)) + DABS(DX(I+1)) +
     $              DABS(DX(I+2)) + DABS(DX(I+3)) +
     $              DABS(DX(I+4)) + DABS(DX(I+5))
   20    CONTINUE
      ELSE
         NINCX = N*INCX
         DO 30 I = 1, NINCX, INCX
            DTEMP = DTEMP + DABS(DX(I))
   30    CONTINUE
      END IF
      VASUM = DTEMP
      RETURN
      END
*
************************************************************************
      DOUBLE PRECISION FUNCTION VNRM2(N, X, INCX)
*     Plain square root of the sum of squares (no scaling against
*     overflow, unlike the reference DNRM2).
      INTEGER N, INCX
      DOUBLE PRECISION X(*)
      DOUBLE PRECISION SSQ
      INTEGER I, IX
      INTRINSIC SQRT
*
      VNRM2 = 0.0D0
      IF (N.LT.1 .OR. INCX.LT.1) RETURN
      SSQ = 0.0D0
      IX = 1
      DO 10 I = 1, N
         SSQ = SSQ + X(IX)**2
         IX = IX + INCX
   10 CONTINUE
      VNRM2 = SQRT(SSQ)
      RETURN
      END
*
************************************************************************
      DOUBLE PRECISION FUNCTION VAMAX(N, DX, INCX)
*     The largest absolute value: written as an IF in the unit-stride
*     branch and with the MAX intrinsic in the strided one.
      INTEGER N, INCX
      DOUBLE PRECISION DX(*)
      DOUBLE PRECISION DMAX
      INTEGER I, IX
      INTRINSIC DABS, MAX
*
      VAMAX = 0.0D0
      IF (N.LT.1 .OR. INCX.LE.0) RETURN
      DMAX = DABS(DX(1))
      IF (INCX.EQ.1) THEN
         DO 10 I = 2, N
            IF (DABS(DX(I)).GT.DMAX) DMAX = DABS(DX(I))
   10    CONTINUE
      ELSE
         IX = 1 + INCX
         DO 20 I = 2, N
            DMAX = MAX(DMAX, DABS(DX(IX)))
            IX = IX + INCX
   20    CONTINUE
      END IF
      VAMAX = DMAX
      RETURN
      END
*
************************************************************************
      INTEGER FUNCTION IVAMAX(N, DX, INCX)
*     Index of the first element of largest absolute value (as IDAMAX).
      INTEGER N, INCX
      DOUBLE PRECISION DX(*)
      DOUBLE PRECISION DMAX
      INTEGER I, IX
      INTRINSIC DABS
*
      IVAMAX = 0
      IF (N.LT.1 .OR. INCX.LE.0) RETURN
      IVAMAX = 1
      IF (N.EQ.1) RETURN
      DMAX = DABS(DX(1))
      IX = 1 + INCX
      DO 10 I = 2, N
         IF (DABS(DX(IX)).GT.DMAX) THEN
            IVAMAX = I
            DMAX = DABS(DX(IX))
         END IF
         IX = IX + INCX
   10 CONTINUE
      RETURN
      END
*
************************************************************************
      SUBROUTINE VCOPY(N, DX, INCX, DY, INCY)
      INTEGER N, INCX, INCY
      DOUBLE PRECISION DX(*), DY(*)
      INTEGER I, IX, IY, M, MP1
      INTRINSIC MOD
*
      IF (N.LE.0) RETURN
      IF (INCX.EQ.1 .AND. INCY.EQ.1) THEN
         M = MOD(N, 7)
         IF (M.NE.0) THEN
            DO 10 I = 1, M
               DY(I) = DX(I)
   10       CONTINUE
            IF (N.LT.7) RETURN
         END IF
         MP1 = M + 1
         DO 20 I = MP1, N, 7
            DY(I) = DX(I)
            DY(I+1) = DX(I+1)
            DY(I+2) = DX(I+2)
            DY(I+3) = DX(I+3)
            DY(I+4) = DX(I+4)
            DY(I+5) = DX(I+5)
            DY(I+6) = DX(I+6)
   20    CONTINUE
      ELSE
         IX = 1
         IY = 1
         IF (INCX.LT.0) IX = (-N+1)*INCX + 1
         IF (INCY.LT.0) IY = (-N+1)*INCY + 1
         DO 30 I = 1, N
            DY(IY) = DX(IX)
            IX = IX + INCX
            IY = IY + INCY
   30    CONTINUE
      END IF
      RETURN
      END
*
************************************************************************
      SUBROUTINE VSWAP(N, DX, INCX, DY, INCY)
      INTEGER N, INCX, INCY
      DOUBLE PRECISION DX(*), DY(*)
      DOUBLE PRECISION DTEMP
      INTEGER I, IX, IY, M, MP1
      INTRINSIC MOD
*
      IF (N.LE.0) RETURN
      IF (INCX.EQ.1 .AND. INCY.EQ.1) THEN
         M = MOD(N, 3)
         IF (M.NE.0) THEN
            DO 10 I = 1, M
               DTEMP = DX(I)
               DX(I) = DY(I)
               DY(I) = DTEMP
   10       CONTINUE
            IF (N.LT.3) RETURN
         END IF
         MP1 = M + 1
         DO 20 I = MP1, N, 3
            DTEMP = DX(I)
            DX(I) = DY(I)
            DY(I) = DTEMP
            DTEMP = DX(I+1)
            DX(I+1) = DY(I+1)
            DY(I+1) = DTEMP
            DTEMP = DX(I+2)
            DX(I+2) = DY(I+2)
            DY(I+2) = DTEMP
   20    CONTINUE
      ELSE
         IX = 1
         IY = 1
         IF (INCX.LT.0) IX = (-N+1)*INCX + 1
         IF (INCY.LT.0) IY = (-N+1)*INCY + 1
         DO 30 I = 1, N
            DTEMP = DX(IX)
            DX(IX) = DY(IY)
            DY(IY) = DTEMP
            IX = IX + INCX
            IY = IY + INCY
   30    CONTINUE
      END IF
      RETURN
      END
