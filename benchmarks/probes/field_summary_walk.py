"""Probe: Triton field_summary_like (nx 8132, ny 6776): the generated flat form against programs that
walk a strip of W columns down R rows, the node row's squared velocities carried to the next row."""

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

ROOF = 4284.0  # GB/s: the copy roof the percentages are of (docs/measurements/tuning-evidence.md)


@triton.jit
def _add_cells(vo, de, en, pr, c, m, vs, vol, mass, ie, ke, press):
    """The five sums with the cells at ``c`` (``vs``: their corners' squared velocities / 4)."""
    cv = tl.load(vo + c, mask=m, other=0.0)
    cm = cv * tl.load(de + c, mask=m, other=0.0)
    vol += cv
    mass += cm
    ie += cm * tl.load(en + c, mask=m, other=0.0)
    ke += cm * 0.5 * vs
    press += cv * tl.load(pr + c, mask=m, other=0.0)
    return vol, mass, ie, ke, press


@triton.jit
def _store_sums(part, p, vol, mass, ie, ke, press):
    tl.store(part + p + 0, tl.sum(vol, axis=0))
    tl.store(part + p + 1, tl.sum(mass, axis=0))
    tl.store(part + p + 2, tl.sum(ie, axis=0))
    tl.store(part + p + 3, tl.sum(ke, axis=0))
    tl.store(part + p + 4, tl.sum(press, axis=0))


@triton.jit
def _node_pair(xv, yv, q, m):
    """Squared velocities of the nodes at ``q`` and ``q + 1``, summed."""
    a0 = tl.load(xv + q, mask=m, other=0.0)
    a1 = tl.load(xv + q + 1, mask=m, other=0.0)
    b0 = tl.load(yv + q, mask=m, other=0.0)
    b1 = tl.load(yv + q + 1, mask=m, other=0.0)
    return (a0 * a0 + b0 * b0) + (a1 * a1 + b1 * b1)


@triton.jit
def fs_i64(vo, de, en, pr, xv, yv, nx, ny, part, BLOCK: tl.constexpr, TILES: tl.constexpr, I32: tl.constexpr):
    nx = tl.cast(nx, tl.int64)
    sc = nx + 4
    sn = nx + 5
    pid = tl.program_id(0)
    vol = tl.zeros([BLOCK], tl.float64)
    mass = tl.zeros([BLOCK], tl.float64)
    ie = tl.zeros([BLOCK], tl.float64)
    ke = tl.zeros([BLOCK], tl.float64)
    press = tl.zeros([BLOCK], tl.float64)
    for tile in tl.static_range(TILES):
        base = (pid.to(tl.int64) * TILES + tile) * BLOCK
        mask = base + tl.arange(0, BLOCK) < nx * ny
        if I32:
            r = (base % nx).to(tl.int32) + tl.arange(0, BLOCK)
            j = r % nx.to(tl.int32)
            k = base // nx + r // nx.to(tl.int32)
        else:
            offs = base + tl.arange(0, BLOCK)
            j = offs % nx
            k = offs // nx
        vs = tl.zeros([BLOCK], tl.float64)
        for kv in tl.static_range(2):
            for jv in tl.static_range(2):
                q = (j + jv + 2) + sn * (k + kv + 2)
                a = tl.load(xv + q, mask=mask, other=0.0)
                b = tl.load(yv + q, mask=mask, other=0.0)
                vs += 0.25 * (a * a + b * b)
        c = (j + 2) + sc * (k + 2)
        vol, mass, ie, ke, press = _add_cells(vo, de, en, pr, c, mask, vs, vol, mass, ie, ke, press)
    _store_sums(part, pid * 5, vol, mass, ie, ke, press)


def rep(name: str, nbytes: float, ms: float) -> None:
    print(f"{name:44s} {ms:8.3f} ms {nbytes / ms / 1e6:7.0f} GB/s {100 * nbytes / ms / 1e6 / ROOF:4.0f}%", flush=True)


@triton.jit
def fs_walk(vo, de, en, pr, xv, yv, nx, ny, part, W: tl.constexpr, R: tl.constexpr):
    nx = tl.cast(nx, tl.int64)
    sc = nx + 4
    sn = nx + 5
    pc = tl.program_id(0)
    pr_ = tl.program_id(1)
    j = pc * W + tl.arange(0, W)
    mj = j < nx
    k0 = pr_ * R
    prev = _node_pair(xv, yv, (j + 2) + sn * (k0 + 2), mj)
    vol = tl.zeros([W], tl.float64)
    mass = tl.zeros([W], tl.float64)
    ie = tl.zeros([W], tl.float64)
    ke = tl.zeros([W], tl.float64)
    press = tl.zeros([W], tl.float64)
    for r in range(R):
        k = k0 + r
        m = mj & (tl.zeros([W], tl.int32) + k < ny)
        nxt = _node_pair(xv, yv, (j + 2) + sn * (k + 3), m)
        vs = 0.25 * (prev + nxt)
        prev = nxt
        c = (j + 2) + sc * (k + 2)
        vol, mass, ie, ke, press = _add_cells(vo, de, en, pr, c, m, vs, vol, mass, ie, ke, press)
    _store_sums(part, (pr_ * tl.num_programs(0) + pc) * 5, vol, mass, ie, ke, press)


def bench(fn) -> float:
    return do_bench(fn, warmup=5, rep=60, return_mode="median")


def main() -> None:
    dev = "cuda"
    nx, ny = 8132, 6776
    arrs = [torch.rand((ny + 4) * (nx + 4), dtype=torch.float64, device=dev) for _ in range(4)]
    arrs += [torch.rand((ny + 5) * (nx + 5), dtype=torch.float64, device=dev) for _ in range(2)]
    nbytes = sum(t.numel() * 8.0 for t in arrs)
    g = (triton.cdiv(nx * ny, 1024 * 8),)
    part = torch.empty(g[0] * 5, dtype=torch.float64, device=dev)
    base = lambda: fs_i64[g](*arrs, nx, ny, part, BLOCK=1024, TILES=8, I32=True, num_warps=8)  # noqa: E731
    base()
    ref = part.view(-1, 5).sum(0).clone()
    rep("field_summary flat B1024 T8 w8", nbytes, bench(base))
    for w in (256, 512, 1024):
        for r in (8, 16, 32):
            for warps in (4, 8):
                g2 = (triton.cdiv(nx, w), triton.cdiv(ny, r))
                part2 = torch.empty(g2[0] * g2[1] * 5, dtype=torch.float64, device=dev)

                def run(g2=g2, part2=part2, w=w, r=r, warps=warps) -> None:
                    fs_walk[g2](*arrs, nx, ny, part2, W=w, R=r, num_warps=warps)

                run()
                err = ((part2.view(-1, 5).sum(0) - ref) / ref).abs().max().item()
                rep(f"field_summary walk W{w} R{r} w{warps}{' WRONG' if err > 1e-10 else ''}", nbytes, bench(run))
    rep("field_summary flat B1024 T8 w8 (again)", nbytes, bench(base))


if __name__ == "__main__":
    main()
