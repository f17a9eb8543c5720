// lap3d shapes: points per thread, queue or not, tile widths (nx 698, ny 582, nz 466).
#include "probe_timing.cuh"

#define U(i, j, k) u[(i) + sx * ((j) + sy * (k))]
#define L(i, j, k) lu[(i) + nx * ((j) + ny * (k))]
// Q: register queue along k; P: points per thread along i, PS apart (1: adjacent); M planes per thread
template <bool Q, int P, int PS> __global__ void lap(int nx, int ny, int nz, double r, int M, const double* __restrict__ u, double* __restrict__ lu) {
  const int sx = nx + 2, sy = ny + 2;
  const int ib = blockIdx.x * (blockDim.x * P), tx = threadIdx.x;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (j >= ny) return;
  int ii[P]; bool ok[P];
#pragma unroll
  for (int p = 0; p < P; ++p) { ii[p] = PS == 1 ? ib + tx * P + p : ib + tx + p * PS; ok[p] = ii[p] < nx; if (!ok[p]) ii[p] = nx - 1; }
  const int k0 = blockIdx.z * M, end = min(nz, k0 + M);
  double below[P], here[P];
  if (Q) {
#pragma unroll
    for (int p = 0; p < P; ++p) { below[p] = U(ii[p] + 1, j + 1, k0); here[p] = U(ii[p] + 1, j + 1, k0 + 1); }
  }
  for (int k = k0; k < end; ++k) {
    double v[P];
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int i = ii[p];
      const double above = U(i + 1, j + 1, k + 2);
      const double c = Q ? here[p] : U(i + 1, j + 1, k + 1);
      const double b = Q ? below[p] : U(i + 1, j + 1, k);
      v[p] = r * (-6.0 * c + (U(i, j + 1, k + 1) + U(i + 2, j + 1, k + 1) + U(i + 1, j, k + 1) + U(i + 1, j + 2, k + 1) + b + above));
      if (Q) { below[p] = here[p]; here[p] = above; }
    }
#pragma unroll
    for (int p = 0; p < P; ++p) if (ok[p]) L(ii[p], j, k) = v[p];
  }
}
// the generated form: grid-stride loops over j, i and runs around the queue
__global__ void lap_gen(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) {
  const int sx = nx + 2, sy = ny + 2;
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < ny; j += gridDim.y * blockDim.y)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nx; i += gridDim.x * blockDim.x)
      for (int run = blockIdx.z; run * 8 < nz; run += gridDim.z) {
        const int run_end = nz - run * 8 < 8 ? nz : (run + 1) * 8;
        double k0v = U(i + 1, j + 1, run * 8), k1v = U(i + 1, j + 1, run * 8 + 1);
        for (int k = run * 8; k < run_end; ++k) {
          const double k2v = U(i + 1, j + 1, k + 2);
          L(i, j, k) = r * (-6.0 * k1v + (U(i, j + 1, k + 1) + U(i + 2, j + 1, k + 1) + U(i + 1, j, k + 1) + U(i + 1, j + 2, k + 1) + k0v + k2v));
          k0v = k1v; k1v = k2v;
        }
      }
}
int main() {
  CK(cudaMalloc(&g_flush, FLUSH));
  char nm[96];
  const int nx = 698, ny = 582, nz = 466;
  const size_t nu = (size_t)(nx + 2) * (ny + 2) * (nz + 2), nl = (size_t)nx * ny * nz;
  double *u, *lu, *ref; CK(cudaMalloc(&u, nu * 8)); CK(cudaMalloc(&lu, nl * 8)); CK(cudaMalloc(&ref, nl * 8));
  fill<<<4096, 256>>>(u, nu, 0.37); const double r = 2.5; const double bytes = (nu + nl) * 8.0;
  lap_gen<<<dim3(cdiv(nx, 64), cdiv(ny, 4), cdiv(nz, 8)), dim3(64, 4)>>>(nx, ny, nz, r, u, ref); CK(cudaDeviceSynchronize());
  rep("lap3d generated form 64x4 M8", bytes, timeit([&] { lap_gen<<<dim3(cdiv(nx, 64), cdiv(ny, 4), cdiv(nz, 8)), dim3(64, 4)>>>(nx, ny, nz, r, u, lu); }));
  auto run = [&](const char* kind, auto kern, int P, int bx, int by, int M) {
    dim3 g(cdiv(nx, bx * P), cdiv(ny, by), cdiv(nz, M)), b(bx, by);
    CK(cudaMemset(lu, 0, nl * 8)); kern<<<g, b>>>(nx, ny, nz, r, M, u, lu); CK(cudaDeviceSynchronize());
    const double d = maxdiff(lu, ref, nl);
    snprintf(nm, 96, "lap3d %s %dx%d M%d%s", kind, bx, by, M, d > 0 ? " WRONG" : "");
    rep(nm, bytes, timeit([&] { kern<<<g, b>>>(nx, ny, nz, r, M, u, lu); }));
  };
  for (int M : {4, 8, 16}) {
    run("queue p1", lap<true, 1, 1>, 1, 64, 4, M);
    run("queue p1", lap<true, 1, 1>, 1, 128, 2, M);
    run("loads p1", lap<false, 1, 1>, 1, 64, 4, M);
    run("loads p1", lap<false, 1, 1>, 1, 128, 2, M);
    run("queue p2 adjacent", lap<true, 2, 1>, 2, 64, 2, M);
    run("queue p2 adjacent", lap<true, 2, 1>, 2, 64, 4, M);
    run("loads p2 adjacent", lap<false, 2, 1>, 2, 64, 2, M);
    run("loads p2 adjacent", lap<false, 2, 1>, 2, 64, 4, M);
    run("queue p2 32 apart", lap<true, 2, 32>, 2, 32, 8, M);
    run("queue p2 64 apart", lap<true, 2, 64>, 2, 64, 4, M);
    run("loads p2 64 apart", lap<false, 2, 64>, 2, 64, 4, M);
    run("queue p4 adjacent", lap<true, 4, 1>, 4, 32, 4, M);
  }
  return 0;
}
