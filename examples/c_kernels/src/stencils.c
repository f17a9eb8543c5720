/* Stencils in the style of PolyBench/C: a Jacobi sweep pair over time steps, and a
   fixed-size five-point smoother whose extents are size macros. */
#include "kernels.h"

void kernel_jacobi_2d(int tsteps, int n, DATA_TYPE A[n][n], DATA_TYPE B[n][n])
{
  int t, i, j;
#pragma scop
  for (t = 0; t < tsteps; t++) {
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        B[i][j] = SCALAR_VAL(0.2) * (A[i][j] + A[i][j-1] + A[i][1+j] + A[1+i][j] + A[i-1][j]);
    for (i = 1; i < n - 1; i++)
      for (j = 1; j < n - 1; j++)
        A[i][j] = SCALAR_VAL(0.2) * (B[i][j] + B[i][j-1] + B[i][1+j] + B[1+i][j] + B[i-1][j]);
  }
#pragma endscop
}

/* out := a clipped five-point average of in, on the interior of a fixed NX-by-NY grid */
void smooth_fixed(DATA_TYPE in[NX][NY], DATA_TYPE out[NX][NY], DATA_TYPE lo, DATA_TYPE hi)
{
  for (int i = 1; i <= NX - 2; i++)
    for (int j = 1; j <= NY - 2; j++) {
      DATA_TYPE v = 0.25 * (in[i-1][j] + in[i+1][j] + in[i][j-1] + in[i][j+1]);
      out[i][j] = v < lo ? lo : (v > hi ? hi : v);
    }
}
