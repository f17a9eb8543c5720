! stencil3d.F90 -- 3-D Laplacian and Jacobi smoother with halos. Preprocessed:
! compile with -cpp -I../include and optionally -DORDER=4 (default 2) and
! -DWEIGHTED_JACOBI (damped Jacobi with weight 2/3 instead of plain Jacobi).
!
! lap3d     lu := laplacian(u) on the interior: 7 points (second order) or 13 (fourth order)
! jacobi3d  one Jacobi sweep for -laplacian(u) = f
! stencil_halo  the halo width these routines were compiled with (1, or 2 at fourth order)

subroutine lap3d(nx, ny, nz, h, u, lu)
  implicit none
#include "stencil_coeffs.h"
  integer, intent(in) :: nx, ny, nz
  real(8), intent(in) :: h
  real(8), intent(in) :: u(1-NG:nx+NG, 1-NG:ny+NG, 1-NG:nz+NG)
  real(8), intent(out) :: lu(nx, ny, nz)
  real(8) :: r
  integer :: i, j, k

  r = 1.0d0/(h*h)
  do k = 1, nz
     do j = 1, ny
        do i = 1, nx
           lu(i, j, k) = r*(3.0d0*c0*u(i, j, k) &
                + c1*(u(i-1, j, k) + u(i+1, j, k) + u(i, j-1, k) + u(i, j+1, k) + u(i, j, k-1) + u(i, j, k+1)) &
#if ORDER == 4
                + c2*(u(i-2, j, k) + u(i+2, j, k) + u(i, j-2, k) + u(i, j+2, k) + u(i, j, k-2) + u(i, j, k+2)) &
#endif
                )
        end do
     end do
  end do
end subroutine lap3d

subroutine jacobi3d(nx, ny, nz, h, f, u, unew)
  implicit none
#include "stencil_coeffs.h"
  integer, intent(in) :: nx, ny, nz
  real(8), intent(in) :: h
  real(8), intent(in) :: f(nx, ny, nz)
  real(8), intent(in) :: u(1-NG:nx+NG, 1-NG:ny+NG, 1-NG:nz+NG)
  real(8), intent(out) :: unew(nx, ny, nz)
#ifdef WEIGHTED_JACOBI
  real(8), parameter :: omega = 2.0d0/3.0d0
#endif
  real(8) :: nb, diag
  integer :: i, j, k

  diag = -3.0d0*c0
  do k = 1, nz
     do j = 1, ny
        do i = 1, nx
           nb = c1*(u(i-1, j, k) + u(i+1, j, k) + u(i, j-1, k) + u(i, j+1, k) + u(i, j, k-1) + u(i, j, k+1))
#if ORDER == 4
           nb = nb + c2*(u(i-2, j, k) + u(i+2, j, k) + u(i, j-2, k) + u(i, j+2, k) + u(i, j, k-2) + u(i, j, k+2))
#endif
#ifdef WEIGHTED_JACOBI
           unew(i, j, k) = (1.0d0 - omega)*u(i, j, k) + omega*(h*h*f(i, j, k) + nb)/diag
#else
           unew(i, j, k) = (h*h*f(i, j, k) + nb)/diag
#endif
        end do
     end do
  end do
end subroutine jacobi3d

integer function stencil_halo()
  implicit none
  stencil_halo = NG
end function stencil_halo
