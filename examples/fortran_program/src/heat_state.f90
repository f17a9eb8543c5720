! The state of the heat program: the grid, the fields and the physical constants.
module heat_state
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  real(dp) :: alpha = 0.2_dp        ! diffusion number (stable below 0.25)
  real(dp) :: source_rate = 0.05_dp ! heat added per step at the hot spot
  integer :: nx = 0, ny = 0
  real(dp), allocatable :: u(:, :), unew(:, :)
end module heat_state
