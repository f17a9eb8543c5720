/* Reductions: a value returned, scalars written through pointers, float data. */
#include "kernels.h"

/* the Euclidean norm of x */
double norm2(int n, const double *restrict x)
{
  double s = 0.0;
#pragma omp parallel for reduction(+:s)
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  return SQRT_FUN(s);
}

/* the smallest and largest element of x, and how many are negative */
void min_max(int n, const double *x, double *lo, double *hi, int *negative)
{
  *lo = x[0];
  *hi = x[0];
  *negative = 0;
  for (int i = 0; i < n; i++) {
    *lo = fmin(*lo, x[i]);
    *hi = x[i] > *hi ? x[i] : *hi;
    if (x[i] < 0)
      *negative += 1;
  }
}

/* y := a*|x| + y in single precision */
void saxpy_abs(int n, float a, const float *x, float *y)
{
  for (int i = 0; i < n; ++i)
    y[i] += a * fabsf(x[i]);
}
