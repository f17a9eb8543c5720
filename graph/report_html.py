"""report.html: the report.md of a run as one HTML page, the charts inlined. Only the
Markdown that graph.report writes is understood: headings, paragraphs, pipe
tables, bullet lists (two levels), ``code`` and image lines."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
          "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
          "font-size:13px}th{background:#f4f4f4}code{background:#f4f4f4;padding:0 3px}")


def _inline(text: str) -> str:
    out = escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def _row(line: str, cell: str) -> str:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return "<tr>" + "".join(f"<{cell}>{_inline(c)}</{cell}>" for c in cells) + "</tr>"


def render_html(markdown: str, folder: Path) -> str:
    """The page for ``markdown``; images named in it are read from ``folder`` and inlined (SVG)."""
    html: list[str] = []
    table: list[str] = []
    depth = 0

    def close_lists(to: int = 0) -> None:
        nonlocal depth
        while depth > to:
            html.append("</ul>")
            depth -= 1

    def flush_table() -> None:
        if table:
            rows = [_row(table[0], "th")] + [_row(r, "td") for r in table[2:]]
            html.append("<table>" + "".join(rows) + "</table>")
            table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            close_lists()
            table.append(line)
            continue
        flush_table()
        image = re.fullmatch(r"!\[[^\]]*\]\(([^)]+)\)", line.strip())
        bullet = re.match(r"( *)- (.*)", line)
        if bullet:
            level = len(bullet.group(1)) // 2 + 1
            while depth < level:
                html.append("<ul>")
                depth += 1
            close_lists(level)
            html.append(f"<li>{_inline(bullet.group(2))}</li>")
            continue
        close_lists()
        if image:
            svg = folder / image.group(1)
            html.append(f"<div>{svg.read_text()}</div>" if svg.is_file() and svg.suffix == ".svg" else
                        f'<img src="{escape(image.group(1))}">')
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            html.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.strip():
            html.append(f"<p>{_inline(line)}</p>")
    flush_table()
    close_lists()
    title = next((m.group(1) for m in re.finditer(r"<h1>(.*?)</h1>", "".join(html))), "report")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{re.sub('<[^>]+>', '', title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n" + "\n".join(html) + "\n</body></html>\n")
