"""HTML pieces the report page is built from: sections, notes, tables, and cells (escaped text, numbers,
ratios, ACF hashes, configs). Every cell helper returns escaped HTML; ``html_table`` escapes only headers."""
from __future__ import annotations

import html
import json
import math
from collections.abc import Collection, Iterable, Sequence
from typing import Any


def section(key: str, title: str, parts: Iterable[str]) -> str:
    return f'<section id="{key}"><h2>{esc(title)}</h2>{"".join(p for p in parts if p)}</section>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>' if text else ""


def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, text_columns: Collection[str] = (),
               row_classes: Sequence[str] | None = None) -> str:
    """Cells must already be escaped; headers are escaped here."""
    def cls(h: str) -> str:
        return ' class="text"' if h in text_columns else ""
    head = "".join(f"<th{cls(h)}>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        rc = row_classes[i] if row_classes else ""
        tds = "".join(f"<td{cls(h)}>{cell}</td>" for h, cell in zip(headers, row, strict=True))
        body.append(f'<tr class="{rc}">{tds}</tr>' if rc else f"<tr>{tds}</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def is_nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def fmt(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return esc(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return esc(value)
    if math.isnan(number):
        return "-"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return f"{number:.0f}" if number.is_integer() and abs(number) < 1e15 else f"{number:.4g}"


def times(value: Any) -> str:
    return "-" if is_nan(value) else ("∞" if math.isinf(float(value)) else f"{float(value):.3f}x")


def acf_cell(value: Any, label: str | None = None) -> str:
    """The ACF's short hash (the full one on hover) and, below it, what it is (report/acf_labels)."""
    sha = value if isinstance(value, str) else ""
    if not sha:
        return "none"
    named = f'<br><span class="acf-label">{esc(label)}</span>' if label else ""
    return f'<code title="{esc(sha)}">{esc(sha[:12])}</code>{named}'



def config_cell(text: Any) -> str:
    if isinstance(text, str):
        try:
            config = json.loads(text)
        except json.JSONDecodeError:
            return esc(text)
    else:
        config = text
    if isinstance(config, dict):
        return esc(" ".join(f"{k}={v}" for k, v in config.items()) or "{}")
    return "" if config is None or (isinstance(config, float) and math.isnan(config)) else esc(config)

