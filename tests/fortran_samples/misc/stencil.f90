subroutine jacobi2d(n, m, u, unew)
  implicit none
  integer, intent(in) :: n, m
  real(kind=8), intent(in) :: u(0:n+1, 0:m+1)
  real(kind=8), intent(out) :: unew(0:n+1, 0:m+1)
  integer :: i, j
  do j = 1, m
    do i = 1, n
      unew(i, j) = 0.25d0 * (u(i-1, j) + u(i+1, j) + u(i, j-1) + u(i, j+1))
    end do
  end do
end subroutine jacobi2d

subroutine heat3d(x_min, x_max, y_min, y_max, nz, c, d, e)
  implicit none
  integer, parameter :: dp = selected_real_kind(15, 307)
  integer :: x_min, x_max, y_min, y_max, nz
  real(dp) :: c
  real(dp) :: d(x_min-2:x_max+2, y_min-2:y_max+2, nz)
  real(dp) :: e(x_min-2:x_max+2, y_min-2:y_max+2, nz)
  integer :: i, j, k
  do k = 2, nz - 1
    do j = y_min, y_max
      do i = x_min, x_max
        e(i, j, k) = d(i, j, k) + c * (d(i-1, j, k) + d(i+1, j, k) + d(i, j, k-1) + d(i, j, k+1) &
                     - 4.0_dp * d(i, j, k))
      end do
    end do
  end do
end subroutine heat3d

subroutine prefix(n, x, y)
  integer n
  real x(n), y(n)
  integer i
  do i = 2, n
    x(i) = x(i-1) + y(i)
  end do
end subroutine prefix

subroutine reverse_scale(n, a, s)
  integer n
  double precision a(n), s
  integer i
  do i = n, 1, -1
    a(i) = s * a(i)
  end do
end subroutine reverse_scale

subroutine omp_sum(n, x, s)
  integer, intent(in) :: n
  real(8), intent(in) :: x(n)
  real(8), intent(out) :: s
  integer :: i
  s = 0
  !$omp parallel do reduction(+:s)
  do i = 1, n
    s = s + x(i)
  end do
  !$omp end parallel do
end subroutine omp_sum

subroutine conc(n, x)
  integer, intent(in) :: n
  real, intent(inout) :: x(n)
  integer :: i
  do concurrent (i = 1:n)
    x(i) = 2.0 * x(i)
  end do
end subroutine conc
