// Wrong on purpose: never returns.
extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {
  (void)n; (void)da; (void)dx; (void)incx; (void)dy; (void)incy;
  volatile int spin = 1;
  while (spin) {
  }
}
