      LOGICAL FUNCTION LSAME(CA, CB)
*     .TRUE. when the characters CA and CB are the same letter, ignoring
*     case (ASCII). Used by the matrix routines to test option flags
*     such as TRANS, in the manner of the reference BLAS.
      CHARACTER CA, CB
      INTEGER INTA, INTB
      INTRINSIC ICHAR
*
      LSAME = CA.EQ.CB
      IF (LSAME) RETURN
      INTA = ICHAR(CA)
      INTB = ICHAR(CB)
      IF (INTA.GE.97 .AND. INTA.LE.122) INTA = INTA - 32
      IF (INTB.GE.97 .AND. INTB.LE.122) INTB = INTB - 32
      LSAME = INTA.EQ.INTB
      RETURN
      END
