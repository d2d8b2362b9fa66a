"""Cells and rows of a Markdown results table, formatted the way docs/benchmarks.md writes them.

``fmt`` is the benchmarks' own number format (``benchmarks/_common.py`` ``fmt_num``: what each script's
``--markdown`` prints), so a table rendered here reads like the one the script prints. ``num`` keeps
every digit the results file kept, thousands separated (the ledger and store files are rounded already).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = ["fmt", "num", "pct", "fixed", "frac", "md_table", "row", "times", "yes_no"]


def fmt(value: Any, digits: int = 1) -> str:
    """A number as the benchmark scripts print it: 1,234 / 12.3 / 0.123; ``None`` is ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.{digits}f}"
        return f"{value:.{max(digits, 3)}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def num(value: float | int) -> str:
    """Every digit the results file kept, thousands separated."""
    return format(value, ",")


def fixed(value: float | int, digits: int) -> str:
    """A fixed number of decimals, thousands separated, halves rounded up as the file's digits read.

    ``1.295`` is ``1.30`` (as a person rounds the number in the file), not ``1.29`` (its binary value).
    """
    step = Decimal(1).scaleb(-digits)
    rounded = Decimal(repr(value)).quantize(step, rounding=ROUND_HALF_UP)
    return f"{rounded:,.{digits}f}"


def times(ratio: float) -> str:
    """A ratio to a baseline in two significant digits (``0.78``, ``1.5``); the baseline itself is ``1.0``."""
    shown = f"{ratio:.2g}"
    if "." not in shown and "e" not in shown:
        return f"{shown}.0"
    return shown


def pct(share: float | None, digits: int = 1) -> str:
    """A share (0-1) as a percentage with ``digits`` decimals; ``None`` is ``-``."""
    if share is None:
        return "-"
    return f"{share * 100:.{digits}f}%"


def frac(right: int, total: int) -> str:
    """``right/total``, as the page writes a count of answers."""
    return f"{right}/{total}"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def row(cells: Sequence[str]) -> str:
    """One Markdown table row (an empty cell is written ``| |``)."""
    padded = [f" {cell} " if cell else " " for cell in cells]
    return "|" + "|".join(padded) + "|"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> list[str]:
    """A Markdown table: the header, its rule, then each row with every cell through ``fmt``.

    ``align`` has one letter per column, ``l`` (left) or ``r`` (right); by default the first column is
    left and the others right, as ``print_table`` writes them.
    """
    if align is None:
        align = "l" + "r" * (len(headers) - 1)
    if len(align) != len(headers):
        raise ValueError(f"align {align!r} names {len(align)} columns for {len(headers)} headers")
    rule = "|" + "|".join("---:" if side == "r" else "---" for side in align) + "|"
    lines = [row(headers), rule]
    for cells in rows:
        if len(cells) != len(headers):
            raise ValueError(f"a row of {len(cells)} cells under {len(headers)} headers: {cells!r}")
        lines.append(row([fmt(cell) for cell in cells]))
    return lines
