! matvec.f90 -- general matrix-vector product in the style of the reference DGEMV.
!
!   y := alpha*A*x + beta*y      when trans is 'N' or 'n'
!   y := alpha*A**T*x + beta*y   when trans is 'T', 't', 'C' or 'c'
!
! A is m-by-n with leading dimension lda (column-major); x and y are vectors
! with increments incx and incy (negative increments walk them backwards).
! Bad arguments are reported through XERBLA, after which the routine returns.
! The 'N' case sweeps A by columns (an AXPY per column: the j loop carries y);
! the 'T' case forms one dot product per column (a reduction per j).

subroutine dgemv_like(trans, m, n, alpha, a, lda, x, incx, beta, y, incy)
  implicit none
  character(len=1), intent(in) :: trans
  integer, intent(in) :: m, n, lda, incx, incy
  double precision, intent(in) :: alpha, beta
  double precision, intent(in) :: a(lda, *), x(*)
  double precision, intent(inout) :: y(*)

  logical, external :: lsame
  external :: xerbla
  double precision :: temp
  integer :: i, info, ix, iy, j, jx, jy, kx, ky, lenx, leny

  info = 0
  if (.not. lsame(trans, 'N') .and. .not. lsame(trans, 'T') .and. .not. lsame(trans, 'C')) then
     info = 1
  else if (m < 0) then
     info = 2
  else if (n < 0) then
     info = 3
  else if (lda < max(1, m)) then
     info = 6
  else if (incx == 0) then
     info = 8
  else if (incy == 0) then
     info = 11
  end if
  if (info /= 0) then
     call xerbla('DGEMV_LIKE', info)
     return
  end if

  ! Quick return if possible.
  if (m == 0 .or. n == 0 .or. (alpha == 0.0d0 .and. beta == 1.0d0)) return

  ! Lengths of x and y, and where each starts.
  if (lsame(trans, 'N')) then
     lenx = n
     leny = m
  else
     lenx = m
     leny = n
  end if
  kx = 1
  if (incx < 0) kx = 1 - (lenx - 1)*incx
  ky = 1
  if (incy < 0) ky = 1 - (leny - 1)*incy

  ! First form y := beta*y (beta = 0 clears y without reading it).
  if (beta /= 1.0d0) then
     if (incy == 1) then
        if (beta == 0.0d0) then
           do i = 1, leny
              y(i) = 0.0d0
           end do
        else
           do i = 1, leny
              y(i) = beta*y(i)
           end do
        end if
     else
        iy = ky
        if (beta == 0.0d0) then
           do i = 1, leny
              y(iy) = 0.0d0
              iy = iy + incy
           end do
        else
           do i = 1, leny
              y(iy) = beta*y(iy)
              iy = iy + incy
           end do
        end if
     end if
  end if
  if (alpha == 0.0d0) return

  if (lsame(trans, 'N')) then
     ! y := alpha*A*x + y, one column of A at a time.
     jx = kx
     if (incy == 1) then
        do j = 1, n
           temp = alpha*x(jx)
           do i = 1, m
              y(i) = y(i) + temp*a(i, j)
           end do
           jx = jx + incx
        end do
     else
        do j = 1, n
           temp = alpha*x(jx)
           iy = ky
           do i = 1, m
              y(iy) = y(iy) + temp*a(i, j)
              iy = iy + incy
           end do
           jx = jx + incx
        end do
     end if
  else
     ! y := alpha*A**T*x + y, one dot product per column of A.
     jy = ky
     if (incx == 1) then
        do j = 1, n
           temp = 0.0d0
           do i = 1, m
              temp = temp + a(i, j)*x(i)
           end do
           y(jy) = y(jy) + alpha*temp
           jy = jy + incy
        end do
     else
        do j = 1, n
           temp = 0.0d0
           ix = kx
           do i = 1, m
              temp = temp + a(i, j)*x(ix)
              ix = ix + incx
           end do
           y(jy) = y(jy) + alpha*temp
           jy = jy + incy
        end do
     end if
  end if
end subroutine dgemv_like
