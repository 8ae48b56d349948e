"""Instants: int64 throughout the query engine, with one sentinel for "no bound".

>>> NO_TIME > 10**18
True
"""

from __future__ import annotations

__all__ = ["NO_TIME"]

# Stands for "no bound" without overflowing sums of instants.
NO_TIME = 1 << 60
