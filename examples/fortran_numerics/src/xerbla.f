      SUBROUTINE XERBLA(SRNAME, INFO)
*     Error handler for invalid arguments: prints which argument of
*     which routine was wrong and returns to the caller (the reference
*     XERBLA stops the program; this one lets the caller return).
      CHARACTER*(*) SRNAME
      INTEGER INFO
      INTRINSIC LEN_TRIM
*
      WRITE (*, FMT = 9999) SRNAME(1:LEN_TRIM(SRNAME)), INFO
      RETURN
 9999 FORMAT (' ** On entry to ', A, ' parameter number ', I2,
     $        ' had an illegal value')
      END
