"""The paper's recipe that makes timestamped readings an uncertain archive (Zhou et al. 6.1).

Steps 2-7 of :mod:`uncertain_cep.datasets.uci`, shared by its three loaders: readings in
time order numbered ``event_id = 0 .. n-1``, their times normalised into
``[0, instants - 1]``, groups drawn at random with distinct true instants per group
(:func:`~uncertain_cep.datasets.synthetic.nearest_free`), each true instant widened into
an interval of ``f`` possible instants and each value into a uniform range. The same
arguments and seed always give the same archive.

>>> df = uncertain_archive(np.array([0, 10, 5]), {"v": np.array([1.0, 2.0, 3.0])}, {},
...                        instants=11, f=(1, 2), groups=1, value_width=0.5, seed=0)
>>> list(df.columns), df.event_id.tolist()
(['event_id', 'group', 't_lo', 't_hi', 'v_lo', 'v_hi'], [0, 1, 2])
>>> bool(df.t_lo.min() >= 0 and df.t_hi.max() <= 10)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.datasets.synthetic import nearest_free
from uncertain_cep.errors import InputError

__all__ = ["check_options", "uncertain_archive"]


def uncertain_archive(times: np.ndarray, values: dict[str, np.ndarray],
                      extra: dict[str, np.ndarray], *, instants: int, f: tuple[int, int],
                      groups: int, value_width: float, seed: int) -> pd.DataFrame:
    """Steps 2-7 of :mod:`uncertain_cep.datasets.uci` on events with raw times ``times``
    (any integer unit) and certain attribute ``values``; ``extra`` columns are carried
    along."""
    n = len(times)
    order = np.argsort(times, kind="stable")
    times = times[order]
    span = int(times[-1] - times[0])
    if span > 0:
        scaled = (times - times[0]).astype(float) * ((instants - 1) / span)
        normalised = np.rint(scaled).astype(np.int64)
    else:
        normalised = np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    group = rng.integers(0, groups, size=n).astype(np.int64)
    truth = np.empty(n, dtype=np.int64)
    for g in range(groups):
        idx = np.flatnonzero(group == g)
        if len(idx) > instants:
            raise InputError(f"dependency group {g} has {len(idx)} events but the time domain "
                             f"only {instants} instants, so its events cannot take distinct "
                             "instants; raise instants or groups, or lower n_events")
        # normalised[idx] is sorted, so the sorted free instants keep the events' order.
        truth[idx] = np.sort(nearest_free(normalised[idx], instants))
    width = rng.integers(f[0], f[1] + 1, size=n)
    # Offset of the true instant from t_lo, among those keeping the interval in the domain.
    left = rng.integers(np.maximum(0, truth + width - instants), np.minimum(width - 1, truth) + 1)
    t_lo = truth - left
    cols: dict[str, Any] = {"event_id": np.arange(n, dtype=np.int64), "group": group,
                            "t_lo": t_lo, "t_hi": t_lo + width - 1}
    stds: dict[str, float] = {}
    for name, raw in values.items():
        value = raw[order]
        stds[name] = float(np.std(value))
        half = rng.uniform(0.0, value_width * stds[name], size=n)
        cols[f"{name}_lo"] = value - half
        cols[f"{name}_hi"] = value + half
    for name, column in extra.items():
        cols[name] = column[order]
    df = pd.DataFrame(cols)
    df.attrs.update(std=stds, moved_instants=int((truth != normalised).sum()))
    return df


def check_options(n_events: int, instants: int, f: Sequence[int], groups: int,
                  value_width: float) -> None:
    """Refuse loader options the recipe cannot follow, naming the option."""
    def is_int(v: object) -> bool:
        return isinstance(v, Integral) and not isinstance(v, bool)

    for name, v in (("n_events", n_events), ("instants", instants), ("groups", groups)):
        if not is_int(v) or v < 1:
            raise InputError(f"{name} must be a positive int, got {v!r}")
    if (not isinstance(f, Sequence) or len(f) != 2 or not all(is_int(v) for v in f)
            or not 1 <= f[0] <= f[1]):
        raise InputError(f"f must be a pair (lo, hi) of ints with 1 <= lo <= hi, got {f!r}")
    if f[1] > instants:
        raise InputError(f"f={tuple(f)!r} allows intervals of more than instants={instants} "
                         "instants")
    if (not isinstance(value_width, Real) or isinstance(value_width, bool)
            or not np.isfinite(value_width) or value_width < 0):
        raise InputError(f"value_width must be a finite number >= 0, got {value_width!r}")
