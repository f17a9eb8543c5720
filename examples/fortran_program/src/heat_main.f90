! A heat-diffusion application in the shape of real ones: it reads its size and step count
! from an input file, keeps its state in a module, calls several kernels per time step,
! prints a diagnostic every few steps (resetting a probe cell on the host) and writes the final
! field to a file.
program heat
  use heat_state
  use heat_kernels
  implicit none
  integer :: nsteps, every, step, i, j
  real(dp) :: t, dt

  open(10, file='heat.in', status='old', action='read')
  read(10, *) nx, ny, nsteps, every
  close(10)
  allocate(u(0:nx+1, 0:ny+1), unew(0:nx+1, 0:ny+1))
  do j = 0, ny + 1
    do i = 0, nx + 1
      u(i, j) = 1.0_dp + 0.01_dp * mod(i * 7 + j * 13, 17)
    end do
  end do
  unew = 0.0_dp
  dt = 0.1_dp
  t = 0.0_dp

  write(*, '(a, i0, a, i0, a, i0, a)') 'heat: ', nx, ' x ', ny, ' grid, ', nsteps, ' steps'
  do step = 1, nsteps
    t = t + dt
    call apply_bc(nx, ny, u)
    call diffuse(nx, ny, u, unew)
    call add_source(nx, ny, unew, t)
    call copy_back(nx, ny, unew, u)
    if (mod(step, every) == 0) then
      u(1, 1) = 2.0_dp  ! the probe in the corner is reset on the host
      write(*, '(a, i6, a, es24.16)') 'step ', step, '  heat = ', total_heat(nx, ny, u)
    end if
  end do

  open(11, file='field.dat', status='replace', action='write')
  do j = 1, ny, max(1, ny / 8)
    write(11, '(8es24.16)') (u(i, j), i = 1, nx, max(1, nx / 8))
  end do
  close(11)
  write(*, '(a)') 'run complete'
end program heat
