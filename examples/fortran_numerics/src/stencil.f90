! stencil.f90 -- structured-grid kernels in one module.
!
! jacobi2d            5-point Jacobi sweep; u has a one-cell halo, u(0:nx+1, 0:ny+1)
! heat2d_step         explicit heat step; reads the module variable dt
! set_timestep        sets dt
! ideal_gas_like      CloverLeaf-style equation of state on arrays with two-cell
!                     halos, d(x_min-2:x_max+2, y_min-2:y_max+2); private scalars, sqrt
! field_summary_like  CloverLeaf-style field summary: five sum reductions over the
!                     cells, velocities averaged from the four surrounding nodes

module stencils
  implicit none
  private
  public :: jacobi2d, heat2d_step, set_timestep, ideal_gas_like, field_summary_like, dt

  real(8), parameter :: gamma_gas = 1.4d0   ! ratio of specific heats
  real(8), save :: dt = 1.0d-4              ! time step of heat2d_step

contains

  subroutine jacobi2d(nx, ny, u, unew)
    integer, intent(in) :: nx, ny
    real(8), intent(in) :: u(0:nx+1, 0:ny+1)
    real(8), intent(out) :: unew(1:nx, 1:ny)
    integer :: i, j

    do j = 1, ny
       do i = 1, nx
          unew(i, j) = 0.25d0*(u(i-1, j) + u(i+1, j) + u(i, j-1) + u(i, j+1))
       end do
    end do
  end subroutine jacobi2d

  subroutine set_timestep(new_dt)
    real(8), intent(in) :: new_dt
    dt = new_dt
  end subroutine set_timestep

  subroutine heat2d_step(nx, ny, dx, u, unew)
    ! unew := u + dt*laplacian(u) on the interior; the halo of u holds the boundary values
    integer, intent(in) :: nx, ny
    real(8), intent(in) :: dx
    real(8), intent(in) :: u(0:nx+1, 0:ny+1)
    real(8), intent(out) :: unew(nx, ny)
    real(8) :: r
    integer :: i, j

    r = dt/(dx*dx)
    do j = 1, ny
       do i = 1, nx
          unew(i, j) = u(i, j) + r*(u(i-1, j) + u(i+1, j) + u(i, j-1) + u(i, j+1) - 4.0d0*u(i, j))
       end do
    end do
  end subroutine heat2d_step

  subroutine ideal_gas_like(x_min, x_max, y_min, y_max, density, energy, pressure, soundspeed)
    integer, intent(in) :: x_min, x_max, y_min, y_max
    real(8), intent(in) :: density(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(in) :: energy(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(inout) :: pressure(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(inout) :: soundspeed(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8) :: sound_speed_squared, v, pressurebyenergy, pressurebyvolume
    integer :: j, k

    do k = y_min, y_max
       do j = x_min, x_max
          v = 1.0d0/density(j, k)
          pressure(j, k) = (gamma_gas - 1.0d0)*density(j, k)*energy(j, k)
          pressurebyenergy = (gamma_gas - 1.0d0)*density(j, k)
          pressurebyvolume = -density(j, k)*pressure(j, k)
          sound_speed_squared = v*v*(pressure(j, k)*pressurebyenergy - pressurebyvolume)
          soundspeed(j, k) = sqrt(sound_speed_squared)
       end do
    end do
  end subroutine ideal_gas_like

  subroutine field_summary_like(x_min, x_max, y_min, y_max, volume, density, energy, pressure, &
                                xvel, yvel, vol, mass, ie, ke, press)
    integer, intent(in) :: x_min, x_max, y_min, y_max
    real(8), intent(in) :: volume(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(in) :: density(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(in) :: energy(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(in) :: pressure(x_min-2:x_max+2, y_min-2:y_max+2)
    real(8), intent(in) :: xvel(x_min-2:x_max+3, y_min-2:y_max+3)   ! node-centred
    real(8), intent(in) :: yvel(x_min-2:x_max+3, y_min-2:y_max+3)
    real(8), intent(out) :: vol, mass, ie, ke, press
    real(8) :: vsqrd, cell_vol, cell_mass
    integer :: j, k, jv, kv

    vol = 0.0d0
    mass = 0.0d0
    ie = 0.0d0
    ke = 0.0d0
    press = 0.0d0
    do k = y_min, y_max
       do j = x_min, x_max
          vsqrd = 0.0d0
          do kv = k, k + 1
             do jv = j, j + 1
                vsqrd = vsqrd + 0.25d0*(xvel(jv, kv)**2 + yvel(jv, kv)**2)
             end do
          end do
          cell_vol = volume(j, k)
          cell_mass = cell_vol*density(j, k)
          vol = vol + cell_vol
          mass = mass + cell_mass
          ie = ie + cell_mass*energy(j, k)
          ke = ke + cell_mass*0.5d0*vsqrd
          press = press + cell_vol*pressure(j, k)
       end do
    end do
  end subroutine field_summary_like

end module stencils
