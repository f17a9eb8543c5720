! The computing routines of the heat program: one time step is a boundary update, a
! diffusion sweep, a source term and a copy back; a reduction gives the diagnostic.
module heat_kernels
  use heat_state, only: dp, alpha, source_rate
  implicit none
contains

  ! Insulated walls: each ghost cell takes its neighbour's value.
  subroutine apply_bc(nx, ny, u)
    integer, intent(in) :: nx, ny
    real(dp), intent(inout) :: u(0:nx+1, 0:ny+1)
    integer :: i, j
    do j = 1, ny
      u(0, j) = u(1, j)
      u(nx+1, j) = u(nx, j)
    end do
    do i = 0, nx + 1
      u(i, 0) = u(i, 1)
      u(i, ny+1) = u(i, ny)
    end do
  end subroutine apply_bc

  ! One explicit diffusion step with the five-point Laplacian.
  subroutine diffuse(nx, ny, u, unew)
    integer, intent(in) :: nx, ny
    real(dp), intent(in) :: u(0:nx+1, 0:ny+1)
    real(dp), intent(out) :: unew(0:nx+1, 0:ny+1)
    integer :: i, j
    do j = 1, ny
      do i = 1, nx
        unew(i, j) = u(i, j) + alpha * (u(i-1, j) + u(i+1, j) + u(i, j-1) + u(i, j+1) - 4.0_dp * u(i, j))
      end do
    end do
  end subroutine diffuse

  ! Heat added in a disc around the centre, stronger near it.
  subroutine add_source(nx, ny, unew, t)
    integer, intent(in) :: nx, ny
    real(dp), intent(inout) :: unew(0:nx+1, 0:ny+1)
    real(dp), intent(in) :: t
    integer :: i, j
    real(dp) :: r2, cx, cy
    cx = 0.5_dp * (nx + 1)
    cy = 0.5_dp * (ny + 1)
    do j = 1, ny
      do i = 1, nx
        r2 = ((i - cx)**2 + (j - cy)**2) / (0.1_dp * nx * ny)
        if (r2 < 1.0_dp) unew(i, j) = unew(i, j) + source_rate * (1.0_dp - r2) * (1.0_dp + 0.5_dp * sin(t))
      end do
    end do
  end subroutine add_source

  ! The new field becomes the current one.
  subroutine copy_back(nx, ny, unew, u)
    integer, intent(in) :: nx, ny
    real(dp), intent(in) :: unew(0:nx+1, 0:ny+1)
    real(dp), intent(inout) :: u(0:nx+1, 0:ny+1)
    integer :: i, j
    do j = 1, ny
      do i = 1, nx
        u(i, j) = unew(i, j)
      end do
    end do
  end subroutine copy_back

  ! The total heat in the interior: the diagnostic printed every few steps.
  function total_heat(nx, ny, u) result(total)
    integer, intent(in) :: nx, ny
    real(dp), intent(in) :: u(0:nx+1, 0:ny+1)
    real(dp) :: total
    integer :: i, j
    total = 0.0_dp
    do j = 1, ny
      do i = 1, nx
        total = total + u(i, j)
      end do
    end do
  end function total_heat

end module heat_kernels
