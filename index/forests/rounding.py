"""Rounding exact integers (codes, instants) outward to doubles for R*-tree boxes.

R*-tree coordinates are doubles. Codes of the compact scheme stay below 2**53 for any
index that fits in memory, so they are exact; the paper scheme's codes grow like
fanout**depth and lose precision past 2**53 (and overflow past ~1.8e308). Boxes and query
ranges are therefore rounded outward, so the R*-tree may return a few extra candidates but
never loses one; every candidate is then checked exactly on the node's integer code.

>>> float_down(2**53 + 1) < 2**53 + 1 < float_up(2**53 + 1)
True
>>> float_up(10**400)
inf
"""

from __future__ import annotations

import math
import sys

__all__ = ["float_down", "float_up"]

_FMAX = sys.float_info.max


def float_down(x: int | float) -> float:
    """Largest double <= x (clamped to the double range)."""
    try:
        f = float(x)
    except OverflowError:
        return _FMAX if x > 0 else -math.inf
    return math.nextafter(f, -math.inf) if f > x else f


def float_up(x: int | float) -> float:
    """Smallest double >= x (infinite past the double range)."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf if x > 0 else -_FMAX
    return math.nextafter(f, math.inf) if f < x else f
