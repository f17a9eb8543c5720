#include <cmath>
extern "C" void kt_vsqrt(int n, double* x, double* y) {
  for (int i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
}
