"""SVG charts for the reports: a roofline (arithmetic intensity against achieved
GFLOP/s, one point per region and target, under the machine's copy-bandwidth and
FMA ceilings) and a speedup bar chart. Plain SVG text: no plotting dependency."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from targets.base import TARGETS

W, H = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 60
COLORS = {**{name: t.colour for name, t in TARGETS.items()}, "reference": "#7f7f7f"}


@dataclass(frozen=True)
class Point:
    label: str
    target: str
    intensity: float  # flops per byte
    gflops: float


def _decades(lo: float, hi: float) -> tuple[int, int]:
    return math.floor(math.log10(lo)), math.ceil(math.log10(hi))


Ticks = list[tuple[float, str]]


def _axis(lo_exp: int, hi_exp: int, size: int, start: int,
          flip: bool = False) -> tuple[Ticks, Callable[[float], float]]:
    def pos(v: float) -> float:
        frac = (math.log10(v) - lo_exp) / max(1, hi_exp - lo_exp)
        return start + (size * (1 - frac) if flip else size * frac)

    ticks = [(pos(10.0 ** e), f"1e{e}") for e in range(lo_exp, hi_exp + 1)]
    return ticks, pos


def roofline_svg(points: Sequence[Point], copy_gbps: float, peak_gflops: float, title: str) -> str:
    """Log-log roofline: the roof min(copy * I, peak), the points where they landed."""
    pts = [p for p in points if p.intensity > 0 and p.gflops > 0]
    xs = [p.intensity for p in pts] + [peak_gflops / copy_gbps]
    ys = [p.gflops for p in pts] + [peak_gflops]
    xlo, xhi = _decades(min(xs) / 2, max(xs) * 2)
    ylo, yhi = _decades(min(ys) / 2, max(ys) * 2)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    xt, xpos = _axis(xlo, xhi, pw, LEFT)
    yt, ypos = _axis(ylo, yhi, ph, TOP, flip=True)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for x, lab in xt:
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="#eee"/>'
                   f'<text x="{x:.1f}" y="{TOP + ph + 15}" text-anchor="middle">{lab}</text>')
    for y, lab in yt:
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{lab}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 15}" text-anchor="middle">arithmetic intensity (flop/byte)</text>')
    out.append(f'<text x="15" y="{TOP + ph / 2}" transform="rotate(-90 15 {TOP + ph / 2})" '
               'text-anchor="middle">GFLOP/s</text>')
    roof = []
    for k in range(101):  # the roof, sampled along the x axis
        i = 10 ** (xlo + (xhi - xlo) * k / 100)
        g = min(copy_gbps * i, peak_gflops)
        if 10 ** ylo <= g <= 10 ** yhi:
            roof.append(f"{xpos(i):.1f},{ypos(g):.1f}")
    out.append(f'<polyline points="{" ".join(roof)}" fill="none" stroke="#333" stroke-width="2"/>')
    out.append(f'<text x="{LEFT + pw - 4}" y="{ypos(peak_gflops) - 6:.1f}" text-anchor="end">'
               f'{peak_gflops:,.0f} GFLOP/s, {copy_gbps:,.0f} GB/s</text>')
    for p in pts:
        color = COLORS.get(p.target, "#9467bd")
        out.append(f'<circle cx="{xpos(p.intensity):.1f}" cy="{ypos(p.gflops):.1f}" r="4" fill="{color}">'
                   f'<title>{escape(p.label)} ({p.target}): {p.intensity:.3g} flop/B, {p.gflops:.3g} GFLOP/s</title>'
                   '</circle>')
    for k, (target, color) in enumerate(c for c in COLORS.items() if any(p.target == c[0] for p in pts)):
        out.append(f'<circle cx="{LEFT + 12}" cy="{TOP + 14 + 16 * k}" r="4" fill="{color}"/>'
                   f'<text x="{LEFT + 22}" y="{TOP + 18 + 16 * k}">{target}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def speedup_svg(bars: Sequence[tuple[str, float]], title: str, unit: str = "x over the reference") -> str:
    """Horizontal bars on a log scale, with 1x marked."""
    bars = [(lab, v) for lab, v in bars if v > 0]
    if not bars:
        return ""
    row = 18
    height = TOP + row * len(bars) + BOTTOM
    label_w = 230
    pw = W - label_w - RIGHT
    lo, hi = _decades(min(min(v for _, v in bars), 1.0) / 1.5, max(max(v for _, v in bars), 1.0) * 1.5)
    ticks, xpos = _axis(lo, hi, pw, label_w)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" '
           'font-size="11">', f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>']
    for x, lab in ticks:
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{height - BOTTOM}" stroke="#eee"/>'
                   f'<text x="{x:.1f}" y="{height - BOTTOM + 15}" text-anchor="middle">{lab}</text>')
    one = xpos(1.0)
    for k, (lab, v) in enumerate(bars):
        y = TOP + row * k
        x = xpos(v)
        color = "#2ca02c" if v >= 1 else "#d62728"
        out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{escape(lab)}</text>'
                   f'<rect x="{min(one, x):.1f}" y="{y + 3}" width="{abs(x - one):.1f}" height="{row - 6}" '
                   f'fill="{color}"><title>{escape(lab)}: {v:.3g}{escape(unit[:1])}</title></rect>')
    out.append(f'<line x1="{one:.1f}" y1="{TOP}" x2="{one:.1f}" y2="{height - BOTTOM}" stroke="#333"/>')
    out.append(f'<text x="{W / 2}" y="{height - 15}" text-anchor="middle">{escape(unit)} (log scale)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
