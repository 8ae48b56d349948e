"""Instants inside the query engine: a bounded range, and one sentinel outside it.

An index may hold instants anywhere in int64 (epoch nanoseconds of today are above
``2**60``), but the batch engine's kernels add windows and item counts to instants and
mark "no bound" with a sentinel, in int64 arithmetic that must neither overflow nor meet
the sentinel. So the engine works on instants *relative to a base*:

* an archive spans at most :data:`MAX_SPAN` instants (``max t_hi - min t_lo``; the build
  refuses a wider one, :func:`~uncertain_cep.model.events.read_archive`);
* the engine subtracts a base (:func:`engine_base`: 0 when every instant already lies in
  ``[-MAX_SPAN, MAX_SPAN]``, else the smallest instant), so its instants ``t`` satisfy
  ``|t| <= MAX_SPAN``;
* a window of ``L >= span`` instants constrains nothing (every match lies within the
  span), so a query's window is either infinite or ``L < span <= MAX_SPAN``
  (:func:`effective_window`).

Every value the kernels derive from real instants (an instant plus or minus a window and
a few item counts) then lies within ``[-2 * MAX_SPAN - k, 2 * MAX_SPAN + k]``, strictly
inside ``(-NO_TIME, NO_TIME)``, and the sentinel plus such a value, or twice the sentinel,
stays inside int64 (``2 * NO_TIME = 1.5 * 2**62``). Answers add the base back.

>>> NO_TIME > 2 * MAX_SPAN + 10**6, NO_TIME + 2 * MAX_SPAN + 10**6 < 2**63, 2 * NO_TIME < 2**63
(True, True, True)
>>> engine_base(-5, 10), engine_base(2**62, 2**62 + 7)
(0, 4611686018427387904)
>>> effective_window(9223372036854775807, span=4), effective_window(3, span=4)
(inf, 3)
"""

from __future__ import annotations

import dataclasses
import math
import weakref

import numpy as np

from uncertain_cep.errors import PlanningError
from uncertain_cep.index.forests.forest import REAL
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.model.time_axis import MAX_SPAN

__all__ = ["MAX_SPAN", "NO_TIME", "effective_window", "engine_base", "relative_table"]

# Stands for "no bound": above every value derived from real instants (see above).
NO_TIME = 3 << 60


def engine_base(t_min: int, t_max: int) -> int:
    """What the engine subtracts from the instants of an index whose instants lie in
    ``[t_min, t_max]``: 0 when they already lie within ``MAX_SPAN`` of 0 (no copy of the
    node table needed), else ``t_min``.

    Raises
    ------
    PlanningError
        For an index spanning more than :data:`MAX_SPAN` instants (one not built by
        :func:`~uncertain_cep.model.events.read_archive`, which refuses it).
    """
    t_min, t_max = int(t_min), int(t_max)
    if t_max - t_min > MAX_SPAN:
        raise PlanningError(
            f"this index spans {t_max - t_min} instants (from {t_min} to {t_max}), more "
            f"than the query engine's {MAX_SPAN} (2**60); rebuild it with a coarser "
            "time_unit, or query it with strategy='tree_traversal'")
    if t_min >= -MAX_SPAN and t_max <= MAX_SPAN:
        return 0
    return t_min


def effective_window(window: float, span: int) -> float:
    """``WITHIN window`` over an archive whose instants span ``span`` (``max - min``):
    infinite when it cannot constrain a match (``window >= span``), else itself. Exact:
    ``ts(en) - ts(e1) <= span`` in every world."""
    if window == math.inf or window >= span:
        return math.inf
    return window


# Per node table, its copy with instants relative to a base (made once per index).
_RELATIVE: weakref.WeakKeyDictionary[NodeTable, tuple[int, NodeTable]] = (
    weakref.WeakKeyDictionary())


def relative_table(table: NodeTable, base: int) -> NodeTable:
    """``table`` with its real nodes' instants less ``base`` (itself for a base of 0);
    roots and virtual nodes keep their placeholder instant."""
    if base == 0:
        return table
    made = _RELATIVE.get(table)
    if made is not None and made[0] == base:
        return made[1]
    instant = np.asarray(table.instant)
    shifted = np.where(np.asarray(table.kind) == REAL, instant - np.int64(base), instant)
    out = dataclasses.replace(table, instant=shifted)
    _RELATIVE[table] = (base, out)
    return out
