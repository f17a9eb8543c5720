// Wrong on purpose: the loop stops one short (i < n - 1).
#include <cstdlib>
extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {
  if (n <= 0 || da == 0.0) return;
  long ix = incx < 0 ? (long)(-n + 1) * incx : 0, iy = incy < 0 ? (long)(-n + 1) * incy : 0;
  for (int i = 0; i < n - 1; ++i) dy[iy + (long)i * incy] += da * dx[ix + (long)i * incx];
}
