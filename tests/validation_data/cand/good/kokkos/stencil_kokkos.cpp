// Plain C++ stand-in: a(0:lda-1, 0:m+1), b(ldb, m), column-major.
extern "C" void kt_stencil(int n, int m, double* a, int lda, double* b, int ldb) {
  for (int j = 1; j <= m; ++j)
    for (int i = 1; i <= n; ++i) {
      auto A = [&](int ii, int jj) { return a[ii + (long)jj * lda]; };
      b[(i - 1) + (long)(j - 1) * ldb] = 0.25 * (A(i - 1, j) + A(i + 1, j) + A(i, j - 1) + A(i, j + 1)) - A(i, j);
    }
}
