// Plain C++ stand-in; the COMMON variables are explicit parameters (alpha in, total out).
extern "C" void kt_scale(int n, double* x, double alpha, double* total) {
  double t = 0.0;
  for (int i = 0; i < n; ++i) {
    x[i] = alpha * x[i];
    t += x[i];
  }
  *total = t;
}
