      integer, parameter :: nmax = NMAX_VALUE
