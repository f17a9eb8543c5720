// lap3d, which loop of the generated form costs (nx 698, ny 582, nz 466).
#include "probe_timing.cuh"

#define U(i, j, k) u[(i) + sx * ((j) + sy * (k))]
#define L(i, j, k) lu[(i) + nx * ((j) + ny * (k))]
#define QBODY(M)                                                                                        \
  const int run_end = nz - run * M < M ? nz : (run + 1) * M;                                         \
  double k0v = U(i + 1, j + 1, run * M), k1v = U(i + 1, j + 1, run * M + 1);                          \
  for (int k = run * M; k < run_end; ++k) {                                                           \
    const double k2v = U(i + 1, j + 1, k + 2);                                                        \
    L(i, j, k) = r * (-6.0 * k1v + (U(i, j + 1, k + 1) + U(i + 2, j + 1, k + 1) + U(i + 1, j, k + 1) + U(i + 1, j + 2, k + 1) + k0v + k2v)); \
    k0v = k1v; k1v = k2v;                                                                             \
  }
#define LBODY(M)                                                                                        \
  const int run_end = nz - run * M < M ? nz : (run + 1) * M;                                         \
  for (int k = run * M; k < run_end; ++k)                                                             \
    L(i, j, k) = r * (-6.0 * U(i + 1, j + 1, k + 1) + (U(i, j + 1, k + 1) + U(i + 2, j + 1, k + 1) + U(i + 1, j, k + 1) + U(i + 1, j + 2, k + 1) + U(i + 1, j + 1, k) + U(i + 1, j + 1, k + 2)));
#define SX const int sx = nx + 2, sy = ny + 2;
// G0 the generated form: grid-stride j { i { run } }
template <int M> __global__ void g0(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < ny; j += gridDim.y * blockDim.y)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nx; i += gridDim.x * blockDim.x)
      for (int run = blockIdx.z; run * M < nz; run += gridDim.z) { QBODY(M) } }
// G1 direct: no loops, early return
template <int M> __global__ void g1(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  const int run = blockIdx.z; QBODY(M) }
// G2 direct i, j; grid-stride runs
template <int M> __global__ void g2(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  for (int run = blockIdx.z; run * M < nz; run += gridDim.z) { QBODY(M) } }
// G3 direct i; grid-stride j { run }
template <int M> __global__ void g3(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nx) return;
  for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < ny; j += gridDim.y * blockDim.y)
    for (int run = blockIdx.z; run * M < nz; run += gridDim.z) { QBODY(M) } }
// G4 grid-stride with i outermost: i { j { run } }
template <int M> __global__ void g4(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nx; i += gridDim.x * blockDim.x)
    for (int j = blockIdx.y * blockDim.y + threadIdx.y; j < ny; j += gridDim.y * blockDim.y)
      for (int run = blockIdx.z; run * M < nz; run += gridDim.z) { QBODY(M) } }
// G5 direct, every neighbour loaded (no queue)
template <int M> __global__ void g5(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  const int run = blockIdx.z; LBODY(M) }
// G6 the generated form with the k loop not unrolled
template <int M> __global__ void g6(int nx, int ny, int nz, double r, const double* __restrict__ u, double* __restrict__ lu) { SX
  const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= nx || j >= ny) return;
  const int run = blockIdx.z;
  const int k0 = run * M;
  if (k0 + M <= nz) {  // a whole run: constant trip count
    double k0v = U(i + 1, j + 1, k0), k1v = U(i + 1, j + 1, k0 + 1);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int k = k0 + m;
      const double k2v = U(i + 1, j + 1, k + 2);
      L(i, j, k) = r * (-6.0 * k1v + (U(i, j + 1, k + 1) + U(i + 2, j + 1, k + 1) + U(i + 1, j, k + 1) + U(i + 1, j + 2, k + 1) + k0v + k2v));
      k0v = k1v; k1v = k2v;
    }
  } else { QBODY(M) } }
int main() {
  CK(cudaMalloc(&g_flush, FLUSH));
  char nm[96];
  const int nx = 698, ny = 582, nz = 466;
  const size_t nu = (size_t)(nx + 2) * (ny + 2) * (nz + 2), nl = (size_t)nx * ny * nz;
  double *u, *lu, *ref; CK(cudaMalloc(&u, nu * 8)); CK(cudaMalloc(&lu, nl * 8)); CK(cudaMalloc(&ref, nl * 8));
  fill<<<4096, 256>>>(u, nu, 0.37); const double r = 2.5; const double bytes = (nu + nl) * 8.0;
  g0<8><<<dim3(cdiv(nx, 64), cdiv(ny, 4), cdiv(nz, 8)), dim3(64, 4)>>>(nx, ny, nz, r, u, ref); CK(cudaDeviceSynchronize());
  auto run = [&](const char* kind, auto kern, int M, int bx, int by) {
    dim3 g(cdiv(nx, bx), cdiv(ny, by), cdiv(nz, M)), b(bx, by);
    CK(cudaMemset(lu, 0, nl * 8)); kern<<<g, b>>>(nx, ny, nz, r, u, lu); CK(cudaDeviceSynchronize());
    const double d = maxdiff(lu, ref, nl);
    snprintf(nm, 96, "lap3d %s %dx%d M%d%s", kind, bx, by, M, d > 0 ? " WRONG" : "");
    rep(nm, bytes, timeit([&] { kern<<<g, b>>>(nx, ny, nz, r, u, lu); }));
  };
  for (int rep2 = 0; rep2 < 2; ++rep2) {
    run("G0 generated j{i{run}}", g0<8>, 8, 64, 4);
    run("G1 direct", g1<8>, 8, 64, 4);
    run("G2 direct i,j; run loop", g2<8>, 8, 64, 4);
    run("G3 direct i; j{run}", g3<8>, 8, 64, 4);
    run("G4 i{j{run}}", g4<8>, 8, 64, 4);
    run("G5 direct loads", g5<8>, 8, 64, 4);
    run("G6 direct, whole runs unrolled", g6<8>, 8, 64, 4);
    run("G0 generated j{i{run}}", g0<4>, 4, 64, 4);
    run("G1 direct", g1<4>, 4, 64, 4);
    run("G2 direct i,j; run loop", g2<4>, 4, 64, 4);
    run("G5 direct loads", g5<4>, 4, 64, 4);
    run("G6 direct, whole runs unrolled", g6<4>, 4, 64, 4);
    run("G1 direct", g1<8>, 8, 32, 8);
    run("G6 direct, whole runs unrolled", g6<8>, 8, 32, 8);
  }
  return 0;
}
