"""Where a negation segment's factor folds into a tuple's programme."""

from __future__ import annotations

import numpy as np
import pytest

from uncertain_cep.query.engine.kernels.negation_folds import fold_segments


def _fold_columns(slots: list[int], gap_after: list[int], rel: list[int]
                  ) -> tuple[list[tuple[int, int, int]], list[int], list[int]]:
    """``fold_segments`` of a complete tuple whose columns are in groups ``slots``, with a
    gap after each of ``gap_after``: per segment (its ends, its fold), and per column
    and gap the fold after which they leave the key."""
    m, n_groups, n_gaps = len(slots), max(slots) + 1, len(gap_after)
    most = n_gaps * n_groups
    seg_group = np.zeros(most, dtype=np.int64)
    seg_ends = np.zeros((most, 2), dtype=np.int64)
    seg_fold = np.full(most, -1, dtype=np.int64)
    seg_gaps = np.zeros((most, n_gaps), dtype=np.int64)
    keep_until = np.full(m, -1, dtype=np.int64)
    bounds_until = np.full(n_gaps, -1, dtype=np.int64)
    n_segs, _ = fold_segments(np.arange(m, dtype=np.int64), m, np.array(slots, dtype=np.int64),
                          n_groups, np.array(gap_after, dtype=np.int64), False,
                          np.array(rel, dtype=np.int64), seg_group, seg_ends, seg_fold,
                          seg_gaps, keep_until, bounds_until)
    segments = [(int(seg_ends[q, 0]), int(seg_ends[q, 1]), int(seg_fold[q]))
                for q in range(n_segs)]
    return segments, keep_until.tolist(), bounds_until.tolist()


@pytest.mark.parametrize("later_end_kept", [False, True])
def test_a_segment_folds_once_what_it_reads_is_matched(later_end_kept):
    # Group 0 at columns 0 and 3, group 1 at 1 and 2; a gap after column 1. Group 0's
    # segment (0, 3) reads its earlier end's node and the gap's bounds (known at column
    # 2); its later end's node only where that column keeps one.
    rel = [0, 1, 2, 3 if later_end_kept else -1]
    segments, keep_until, bounds_until = _fold_columns([0, 1, 1, 0], [1], rel)
    fold = 3 if later_end_kept else 2
    assert sorted(segments) == [(0, 3, fold), (1, 2, 2)]
    assert keep_until[0] == fold and keep_until[1] == keep_until[2] == 2
    assert bounds_until == [fold]


def test_a_segment_over_two_gaps_folds_after_the_later_gap():
    # Group 0 at columns 0 and 4 spans both gaps (after columns 1 and 2).
    segments, keep_until, bounds_until = _fold_columns([0, 1, 1, 1, 0], [1, 2],
                                                       [0, 1, 2, 3, -1])
    assert (0, 4, 3) in segments
    assert keep_until[0] == 3
    assert bounds_until == [3, 3]
