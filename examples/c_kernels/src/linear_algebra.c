/* Matrix kernels in the style of PolyBench/C: C99 variable-length arrays sized by the
   arguments, a triangular solve, a matrix-vector product over a leading dimension. */
#include "kernels.h"

/* D := alpha*A*B*C + beta*D, through tmp := alpha*A*B */
void kernel_2mm(int ni, int nj, int nk, int nl, DATA_TYPE alpha, DATA_TYPE beta,
                DATA_TYPE tmp[ni][nj], DATA_TYPE A[ni][nk], DATA_TYPE B[nk][nj],
                DATA_TYPE C[nj][nl], DATA_TYPE D[ni][nl])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++) {
      tmp[i][j] = SCALAR_VAL(0.0);
      for (k = 0; k < nk; ++k)
        tmp[i][j] += alpha * A[i][k] * B[k][j];
    }
  for (i = 0; i < ni; i++)
    for (j = 0; j < nl; j++) {
      D[i][j] *= beta;
      for (k = 0; k < nj; ++k)
        D[i][j] += tmp[i][k] * C[k][j];
    }
#pragma endscop
}

/* C := alpha*A*B + beta*C, row by row as PolyBench's gemm does it */
void kernel_gemm(int ni, int nj, int nk, DATA_TYPE alpha, DATA_TYPE beta,
                 DATA_TYPE C[ni][nj], DATA_TYPE A[ni][nk], DATA_TYPE B[nk][nj])
{
  for (int i = 0; i < ni; i++) {
    for (int j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (int k = 0; k < nk; k++)
      for (int j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
}

/* forward substitution: L x = b, L lower triangular with a dominant diagonal */
void kernel_trisolv(int n, DATA_TYPE L[n][n], DATA_TYPE x[n], DATA_TYPE b[n])
{
  for (int i = 0; i < n; i++) {
    x[i] = b[i];
    for (int j = 0; j < i; j++)
      x[i] -= L[i][j] * x[j];
    x[i] = x[i] / L[i][i];
  }
}

/* y := A x for a row-major m-by-n matrix stored with leading dimension lda */
void matvec_lda(int m, int n, int lda, const double *restrict a, const double *restrict x,
                double *restrict y)
{
#pragma omp parallel for
  for (int i = 0; i < m; i++) {
    double s = 0.0;
    for (int j = 0; j < n; j++)
      s += a[i * lda + j] * x[j];
    y[i] = s;
  }
}
