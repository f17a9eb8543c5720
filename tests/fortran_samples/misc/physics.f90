module physics
  implicit none
  integer, parameter :: wp = kind(1.0d0)
  real(wp) :: gravity = 9.81_wp
  real(wp) :: drag
contains
  subroutine fall(n, v, dt)
    integer, intent(in) :: n
    real(wp), intent(inout) :: v(n)
    real(wp), intent(in) :: dt
    integer :: i
    do i = 1, n
      v(i) = v(i) + dt * (gravity - drag * v(i))
    end do
  end subroutine fall

  function kinetic(n, v, mass) result(e)
    integer, intent(in) :: n
    real(wp), intent(in) :: v(n), mass
    real(wp) :: e
    integer :: i
    e = 0.0_wp
    do i = 1, n
      e = e + 0.5_wp * mass * v(i)**2
    end do
  end function kinetic
end module physics
