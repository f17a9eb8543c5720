/* stencil_coeffs.h -- coefficients of the centred second difference,
   included in the specification part of a routine of stencil3d.F90.
   ORDER (2 or 4, default 2) sets the accuracy, NG the halo width. */
#ifndef ORDER
#define ORDER 2
#endif
#if ORDER == 2
#define NG 1
  real(8), parameter :: c0 = -2.0d0, c1 = 1.0d0
#elif ORDER == 4
#define NG 2
  real(8), parameter :: c0 = -2.5d0, c1 = 4.0d0/3.0d0, c2 = -1.0d0/12.0d0
#else
#error "ORDER must be 2 or 4"
#endif
