"""A ``LIMIT k`` query's first pass: the rows of confidence 1 only (issue 48).

A top-k search prunes by the k-th best confidence found so far
(:func:`~uncertain_cep.query.evaluation.context.raise_threshold`), but the engine searches
batch by batch, depth first, so the rows it finds first are rarely the best: on
localization's 30-item query 1 the threshold reached 1 only after 17.6M entries, 40 s in.
Many archives' best rows are certain (point-like readings, distinct instants: 33M of 42M
rows on bench_answer_forms' broad query), and a search at threshold 1 prunes every
partial tuple with any doubt at once (Zhou et al. 5.3's confidence pruning at its
highest). So a top-k search first looks for rows of confidence 1 alone; if it finds at
least k, the answer's first k rows are among them (every row it did not find is below 1
by more than the order's rounding), else the search starts again from the query's own
threshold, with what the pass cost recorded for EXPLAIN.

Exactness: the engine keeps every row whose confidence reaches ``theta - TOLERANCE`` and
prunes only partial tuples whose bound is below it, so after the pass every row not held
is below ``1 - TOLERANCE``; the pass counts as enough only if the k-th held row is at
least ``1 - TOLERANCE / 2``, so no unseen row can tie with a held one in the answer's
order (confidence rounded to 12 decimals, then event ids).
"""

from __future__ import annotations

from collections.abc import Callable

from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.answer_sinks import TopRows
from uncertain_cep.query.evaluation.context import TOLERANCE, QueryContext

__all__ = ["CERTAIN", "certain_rows_first"]

CERTAIN = 1.0


def certain_rows_first(ctx: QueryContext, search: Callable[[QueryContext], Answer]
                       ) -> Answer | None:
    """Run ``search`` (a batch-engine strategy) over the rows of confidence 1 only, if
    ``ctx`` keeps a top k below that threshold; return its answer if it holds k such rows,
    else None with ``ctx`` as it was (an empty top-k sink, the query's threshold).

    The pass is recorded as ``ctx.stats.certain_pass``: (rows of confidence 1 found,
    entries the pass created, whether they were enough).
    """
    sink = ctx.sink
    if not isinstance(sink, TopRows) or ctx.theta >= CERTAIN - TOLERANCE:
        return None
    query_theta, entries = ctx.theta, ctx.stats.entries_created
    ctx.theta = CERTAIN
    answer = search(ctx)
    enough = sink.rows >= sink.k and sink.floor >= CERTAIN - TOLERANCE / 2
    ctx.stats.certain_pass = (sink.rows, ctx.stats.entries_created - entries, enough)
    if enough:
        return answer
    ctx.sink = TopRows(sink.k, sink.event_ids)
    ctx.theta = query_theta
    return None
