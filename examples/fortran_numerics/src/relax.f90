! Fortran 90 as application codes write it: a module with settings and an allocatable
! field, array syntax, WHERE, array reductions, assumed-shape arguments, a DO WHILE
! convergence loop, and timer and debug calls around the loop nests.
module relax_settings
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  logical :: debug = .false.
  real(dp) :: omega = 0.8_dp
end module relax_settings

module relax_kernels
  use relax_settings
  implicit none
contains

  ! Weighted Jacobi sweeps on a 1-D grid until the update is below tol: the sweeps run on
  ! the device, the convergence test and the timer calls on the host.
  subroutine relax_until(n, u, f, tol, maxit, iters, resid)
    integer, intent(in) :: n, maxit
    real(dp), intent(inout) :: u(0:n+1)
    real(dp), intent(in) :: f(n), tol
    integer, intent(out) :: iters
    real(dp), intent(out) :: resid
    real(dp) :: unew(n)
    integer :: i
    call timer_begin(1)
    iters = 0
    resid = 2.0_dp * tol + 1.0_dp
    do while (resid > tol .and. iters < maxit)
      do i = 1, n
        unew(i) = (1.0_dp - omega) * u(i) + omega * 0.5_dp * (u(i - 1) + u(i + 1) + f(i))
      end do
      resid = maxval(abs(unew - u(1:n)))
      u(1:n) = unew
      iters = iters + 1
      if (debug) print *, 'relax_until: sweep', iters, 'update', resid
    end do
    call timer_end(1)
  end subroutine relax_until

  ! Clip a field to [lo, hi] and return how much mass the clipping removed.
  subroutine clip_field(x, lo, hi, removed)
    real(dp), intent(inout) :: x(:)
    real(dp), intent(in) :: lo, hi
    real(dp), intent(out) :: removed
    real(dp) :: before
    before = sum(x)
    where (x > hi)
      x = hi
    elsewhere (x < lo)
      x = lo
    end where
    removed = before - sum(x)
  end subroutine clip_field

end module relax_kernels
