      LOGICAL FUNCTION LSAME(CA,CB)
*     LSAME returns .TRUE. if CA is the same letter as CB regardless of
*     case.
      CHARACTER CA,CB
      INTEGER INTA,INTB,ZCODE
      LSAME = CA .EQ. CB
      IF (LSAME) RETURN
      ZCODE = ICHAR('Z')
      INTA = ICHAR(CA)
      INTB = ICHAR(CB)
      IF (INTA.GE.97 .AND. INTA.LE.122) INTA = INTA - 32
      IF (INTB.GE.97 .AND. INTB.LE.122) INTB = INTB - 32
      LSAME = INTA .EQ. INTB
      RETURN
      END
