! parallel_loops.f90 -- loops the programmer has marked parallel, with an OpenMP
! directive or DO CONCURRENT. A translator takes these as the user's assertion.
!
! scale_add_omp     z := a*x + y                   !$omp parallel do
! dot_omp           s := x . y                     !$omp parallel do reduction(+:s)
! rank1_concurrent  A := A + alpha*x*y**T          do concurrent over two indices
! clip_concurrent   x := min(max(x, lo), hi)       do concurrent

subroutine scale_add_omp(n, a, x, y, z)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: a, x(n), y(n)
  real(8), intent(out) :: z(n)
  integer :: i

  !$omp parallel do
  do i = 1, n
     z(i) = a*x(i) + y(i)
  end do
  !$omp end parallel do
end subroutine scale_add_omp

subroutine dot_omp(n, x, y, s)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: x(n), y(n)
  real(8), intent(out) :: s
  integer :: i

  s = 0.0d0
  !$omp parallel do reduction(+:s)
  do i = 1, n
     s = s + x(i)*y(i)
  end do
  !$omp end parallel do
end subroutine dot_omp

subroutine rank1_concurrent(m, n, alpha, x, y, a, lda)
  implicit none
  integer, intent(in) :: m, n, lda
  real(8), intent(in) :: alpha, x(m), y(n)
  real(8), intent(inout) :: a(lda, n)
  integer :: i, j

  do concurrent (j = 1:n, i = 1:m)
     a(i, j) = a(i, j) + alpha*x(i)*y(j)
  end do
end subroutine rank1_concurrent

subroutine clip_concurrent(n, lo, hi, x)
  implicit none
  integer, intent(in) :: n
  real(8), intent(in) :: lo, hi
  real(8), intent(inout) :: x(n)
  integer :: i

  do concurrent (i = 1:n)
     x(i) = min(max(x(i), lo), hi)
  end do
end subroutine clip_concurrent
