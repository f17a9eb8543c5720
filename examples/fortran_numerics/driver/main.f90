! main.f90 -- a small program that calls the fortran_numerics routines, checks each
! result against a plain Fortran (or closed-form) answer and prints the errors.
! Build and run:  make run   (see the Makefile; ORDER=4 selects the 4th-order stencils)

program numerics_demo
  use stencils, only: jacobi2d, heat2d_step, set_timestep, ideal_gas_like, field_summary_like
  implicit none
  integer, parameter :: n = 1000, m = 60, nc = 40, k = 24, nx = 24, ny = 20, nz = 16
  double precision, external :: vdot, vasum, vnrm2, vamax
  integer, external :: ivamax, ifirst, stencil_halo
  double precision :: x(n), y(n), y0(n), w(n), z(n)
  double precision :: a(m, nc), xv(m), yv(m), yref(m)
  double precision :: b(k, nc), ak(m, k), akt(k, m), c(m, nc), cref(m, nc)
  double precision :: u2(0:nx+1, 0:ny+1), unew2(nx, ny)
  double precision :: dens(-1:nx+2, -1:ny+2), ener(-1:nx+2, -1:ny+2), pres(-1:nx+2, -1:ny+2)
  double precision :: ss(-1:nx+2, -1:ny+2), volu(-1:nx+2, -1:ny+2), xvel(-1:nx+3, -1:ny+3), yvel(-1:nx+3, -1:ny+3)
  double precision, allocatable :: u3(:, :, :)
  double precision :: lu(nx, ny, nz), f3(nx, ny, nz), unew3(nx, ny, nz)
  double precision :: ta(n), tb(n), tc(n), td(n), tx(n), cp(n), dp(n), r(n)
  double precision :: vol, mass, ie, ke, press, s, h
  integer :: i, j, l, failures, ng

  failures = 0
  do i = 1, n
     x(i) = sin(0.37d0*i)
     y(i) = cos(0.11d0*i)
  end do

  ! ---- level-1 vector kernels
  y0 = y
  call vaxpy(n, 2.5d0, x, 1, y, 1)
  call check('vaxpy incx=1', maxval(abs(y - (y0 + 2.5d0*x))), 1d-14)
  y = y0
  call vaxpy(n/2, -1.5d0, x, -2, y, 1)       ! x walked backwards with stride 2
  w = y0
  do i = 1, n/2
     w(i) = w(i) - 1.5d0*x(n - 1 - 2*(i-1))
  end do
  call check('vaxpy incx=-2', maxval(abs(y - w)), 1d-14)
  y = y0
  call check('vdot', abs(vdot(n, x, 1, y, 1) - sum(x*y)), 1d-11)
  call check('vdot strided', abs(vdot(n/2, x, 2, y, -2) - sum(x(1:n-1:2)*y(n-1:1:-2))), 1d-11)
  call check('vasum', abs(vasum(n, x, 1) - sum(abs(x))), 1d-10)
  call check('vnrm2', abs(vnrm2(n, x, 1) - sqrt(sum(x**2))), 1d-12)
  call check('vamax', abs(vamax(n, x, 1) - maxval(abs(x))), 0d0)
  call check('vamax strided', abs(vamax(333, x, 3) - maxval(abs(x(1:997:3)))), 0d0)
  call check('ivamax', dble(abs(ivamax(n, x, 1) - maxloc(abs(x), 1))), 0d0)
  z = x
  call vscal(n, 3.0d0, z, 1)
  call check('vscal', maxval(abs(z - 3.0d0*x)), 1d-15)
  z = 0
  call vcopy(n, x, 1, z, 1)
  call check('vcopy', maxval(abs(z - x)), 0d0)
  w = y
  call vswap(n, z, 1, w, 1)
  call check('vswap', maxval(abs(z - y)) + maxval(abs(w - x)), 0d0)

  ! ---- matrix-vector and matrix-matrix products
  do j = 1, nc
     do i = 1, m
        a(i, j) = 1.0d0/(i + j - 1)
     end do
  end do
  xv = x(1:m)
  yv = y(1:m)
  call dgemv_like('N', m, nc, 2.0d0, a, m, xv, 1, 0.5d0, yv, 1)
  yref = 2.0d0*matmul(a, xv(1:nc)) + 0.5d0*y(1:m)
  call check('dgemv_like N', maxval(abs(yv - yref)), 1d-13)
  yv = y(1:m)
  call dgemv_like('t', m, nc, 2.0d0, a, m, xv, 1, 0.5d0, yv, 1)
  call check('dgemv_like t', maxval(abs(yv(1:nc) - (2.0d0*matmul(xv, a) + 0.5d0*y(1:nc)))), 1d-13)
  print '(a)', '  (the next line is the expected report of a bad TRANS argument)'
  call dgemv_like('X', m, nc, 2.0d0, a, m, xv, 1, 0.5d0, yv, 1)

  do l = 1, k
     do i = 1, m
        ak(i, l) = sin(dble(i*l))
        akt(l, i) = ak(i, l)
     end do
     do j = 1, nc
        b(l, j) = cos(dble(l + 2*j))
     end do
  end do
  c = 1.0d0
  call matmul_nn(m, nc, k, 1.5d0, ak, m, b, k, -1.0d0, c, m)
  cref = 1.5d0*matmul(ak, b) - 1.0d0
  call check('matmul_nn', maxval(abs(c - cref)), 1d-12)
  c = 1.0d0
  call matmul_tn(m, nc, k, 1.5d0, akt, k, b, k, -1.0d0, c, m)
  call check('matmul_tn', maxval(abs(c - cref)), 1d-12)

  ! ---- 2-D stencils: a linear field is harmonic, so a Jacobi sweep and a heat step keep it
  do j = 0, ny + 1
     do i = 0, nx + 1
        u2(i, j) = 2.0d0*i - 3.0d0*j
     end do
  end do
  call jacobi2d(nx, ny, u2, unew2)
  call check('jacobi2d', maxval(abs(unew2 - u2(1:nx, 1:ny))), 1d-12)
  call set_timestep(1.0d-3)
  call heat2d_step(nx, ny, 0.1d0, u2, unew2)
  call check('heat2d_step', maxval(abs(unew2 - u2(1:nx, 1:ny))), 1d-12)
  call heatin(0.1d0, 1.0d-3)
  call heat1d(n, x, z)
  call check('heat1d ends', abs(z(1) - x(1)) + abs(z(n) - x(n)), 0d0)
  call check('heat1d', abs(z(2) - (x(2) + 0.1d0*(x(1) - 2*x(2) + x(3)))), 1d-14)

  ! ---- CloverLeaf-style kernels on arrays with two-cell halos
  dens = 2.0d0
  ener = 3.0d0
  pres = -1.0d0
  ss = -1.0d0
  volu = 0.5d0
  xvel = 1.0d0
  yvel = 2.0d0
  call ideal_gas_like(1, nx, 1, ny, dens, ener, pres, ss)
  call check('ideal_gas pressure', maxval(abs(pres(1:nx, 1:ny) - 0.4d0*6.0d0)), 1d-14)
  call check('ideal_gas soundspeed', maxval(abs(ss(1:nx, 1:ny) - sqrt(1.4d0*2.4d0/2.0d0))), 1d-14)
  call check('ideal_gas halo untouched', abs(pres(0, 0) + 1.0d0), 0d0)
  call field_summary_like(1, nx, 1, ny, volu, dens, ener, pres, xvel, yvel, vol, mass, ie, ke, press)
  call check('field_summary vol', abs(vol - 0.5d0*nx*ny), 1d-12)
  call check('field_summary ke', abs(ke - 0.5d0*nx*ny*2.0d0*0.5d0*5.0d0), 1d-10)
  call check('field_summary press', abs(press - 0.5d0*nx*ny*2.4d0), 1d-10)

  ! ---- 3-D stencils on u = x^2 + y^2 + z^2 (laplacian 6); the halo width depends on ORDER
  ng = stencil_halo()
  allocate(u3(1-ng:nx+ng, 1-ng:ny+ng, 1-ng:nz+ng))
  h = 0.5d0
  do l = 1 - ng, nz + ng
     do j = 1 - ng, ny + ng
        do i = 1 - ng, nx + ng
           u3(i, j, l) = (h*i)**2 + (h*j)**2 + (h*l)**2
        end do
     end do
  end do
  call lap3d(nx, ny, nz, h, u3, lu)
  call check('lap3d', maxval(abs(lu - 6.0d0)), 1d-11)
  f3 = -6.0d0
  call jacobi3d(nx, ny, nz, h, f3, u3, unew3)
  call check('jacobi3d', maxval(abs(unew3 - u3(1:nx, 1:ny, 1:nz))), 1d-11)

  ! ---- recurrences
  call psum(n, y, z)
  s = 0
  do i = 1, n
     s = s + y(i)
     r(i) = s
  end do
  call check('psum', maxval(abs(z - r)), 1d-11)
  ta = 0.5d0*x
  call linrec(n, ta, y, z)
  call check('linrec', abs(z(n) - (ta(n)*z(n-1) + y(n))), 1d-14)
  ta = x
  tb = 4.0d0 + y
  tc = y
  td = 1.0d0
  call tridag(n, ta, tb, tc, td, tx, cp, dp)
  r(1) = tb(1)*tx(1) + tc(1)*tx(2) - td(1)
  do i = 2, n - 1
     r(i) = ta(i)*tx(i-1) + tb(i)*tx(i) + tc(i)*tx(i+1) - td(i)
  end do
  r(n) = ta(n)*tx(n-1) + tb(n)*tx(n) - td(n)
  call check('tridag residual', maxval(abs(r)), 1d-13)

  ! ---- loops marked parallel by the programmer
  call scale_add_omp(n, 2.0d0, x, y, z)
  call check('scale_add_omp', maxval(abs(z - (2.0d0*x + y))), 1d-15)
  call dot_omp(n, x, y, s)
  call check('dot_omp', abs(s - sum(x*y)), 1d-11)
  c = 0.0d0
  call rank1_concurrent(m, nc, 2.0d0, x(1:m), y(1:nc), c, m)
  call check('rank1_concurrent', abs(c(3, 5) - 2.0d0*x(3)*y(5)), 1d-15)
  z = x
  call clip_concurrent(n, -0.5d0, 0.5d0, z)
  call check('clip_concurrent', maxval(abs(z - min(max(x, -0.5d0), 0.5d0))), 0d0)

  ! ---- a GO TO search
  call check('ifirst', dble(abs(ifirst(n, x, 0.99d0) - findloc(x > 0.99d0, .true., 1))), 0d0)
  call check('ifirst none', dble(abs(ifirst(n, x, 2.0d0) - (n + 1))), 0d0)

  if (failures > 0) then
     print '(i0, a)', failures, ' check(s) FAILED'
     error stop 1
  end if
  print '(a)', 'all checks passed'

contains

  subroutine check(what, err, tol)
    character(len=*), intent(in) :: what
    double precision, intent(in) :: err, tol
    character(len=4) :: verdict

    verdict = 'ok'
    if (.not. (err <= tol)) then
       verdict = 'FAIL'
       failures = failures + 1
    end if
    print '(2x, a4, 2x, a, t36, "error ", es9.2)', verdict, what, err
  end subroutine check

end program numerics_demo
