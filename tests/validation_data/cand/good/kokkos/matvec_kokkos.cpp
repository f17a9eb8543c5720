// Plain C++ stand-in with the host-side TRANS branch.
#include <cstdio>
extern "C" void kt_matvec(char trans, int m, int n, double* a, int lda, double* x, double* y) {
  const char t = (trans >= 'a' && trans <= 'z') ? trans - 32 : trans;
  if (t != 'N' && t != 'T') {
    std::fprintf(stderr, " ** On entry to MATVEC parameter number 1 had an illegal value\n");
    return;
  }
  if (t == 'N') {
    for (int i = 0; i < m; ++i) {
      double s = 0.0;
      for (int j = 0; j < n; ++j) s += a[i + (long)j * lda] * x[j];
      y[i] = s;
    }
  } else {
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int i = 0; i < m; ++i) s += a[i + (long)j * lda] * x[i];
      y[j] = s;
    }
  }
}
