// Hand-written stand-in for generated Kokkos output: daxpy with strides.
#include <Kokkos_Core.hpp>
#include <cstdlib>

namespace {
using HostView = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

void kt_ensure_kokkos() {
  if (!Kokkos::is_initialized()) {
    Kokkos::initialize();
    std::atexit([] { if (Kokkos::is_initialized()) Kokkos::finalize(); });
  }
}
}  // namespace

void daxpy_kokkos(int n, double da, Kokkos::View<const double*> dx, int incx, Kokkos::View<double*> dy, int incy) {
  const long ix0 = incx < 0 ? (long)(-n + 1) * incx : 0;
  const long iy0 = incy < 0 ? (long)(-n + 1) * incy : 0;
  Kokkos::parallel_for("daxpy", Kokkos::RangePolicy<>(0, n), KOKKOS_LAMBDA(const int i) {
    dy(iy0 + (long)i * incy) += da * dx(ix0 + (long)i * incx);
  });
  Kokkos::fence();
}

extern "C" void kt_daxpy(int n, double da, double* dx, int incx, double* dy, int incy) {
  if (n <= 0 || da == 0.0) return;
  kt_ensure_kokkos();
  const size_t lx = 1 + (size_t)(n - 1) * std::abs(incx), ly = 1 + (size_t)(n - 1) * std::abs(incy);
  Kokkos::View<double*> vx("dx", lx), vy("dy", ly);
  Kokkos::deep_copy(vx, HostView(dx, lx));
  Kokkos::deep_copy(vy, HostView(dy, ly));
  daxpy_kokkos(n, da, vx, incx, vy, incy);
  Kokkos::deep_copy(HostView(dy, ly), vy);
}
