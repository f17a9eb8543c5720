// Wrong on purpose: writes through a null pointer.
extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {
  (void)dx; (void)incx; (void)dy; (void)incy;
  volatile double* p = nullptr;
  for (int i = 0; i < n; ++i) p[i] = da;
}
