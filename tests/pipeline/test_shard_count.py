"""How many shards a Spark build cuts an archive into (pipeline/shard_job.py's
shard_count): about ``shard_events`` each, a multiple of the task slots once there are as
many, and, with the default, one per slot where each holds enough events."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from uncertain_cep.pipeline.shard_job import MIN_SLOT_SHARD_EVENTS, shard_count


@given(rows=st.integers(0, 10**10), shard_events=st.integers(1, 10**8),
       slots=st.integers(1, 64), fill=st.booleans())
def test_shards_hold_at_most_shard_events_and_fill_whole_waves_of_slots(
        rows, shard_events, slots, fill):
    n = shard_count(rows, shard_events, slots, fill)
    assert n >= max(1, math.ceil(rows / shard_events))
    if n > 1 and n >= slots:
        assert n % slots == 0
    if not fill:
        # Told how many events a shard holds, the build cuts no more than that asks
        # (besides whole waves of slots).
        assert n <= max(1, math.ceil(rows / shard_events) + slots - 1)


@given(rows=st.integers(0, 10**8), slots=st.integers(1, 64))
def test_by_default_each_slot_gets_a_shard_of_enough_events(rows, slots):
    n = shard_count(rows, 4_000_000, slots, fill_slots=True)
    if rows < 4_000_000:
        assert n == max(1, min(slots, rows // MIN_SLOT_SHARD_EVENTS))
        assert n == 1 or rows / n >= MIN_SLOT_SHARD_EVENTS


def test_a_million_events_on_two_slots_are_two_shards_by_default_and_one_when_told():
    assert shard_count(1_000_000, 4_000_000, 2, fill_slots=True) == 2
    assert shard_count(1_000_000, 4_000_000, 2) == 1
    assert shard_count(400_000, 4_000_000, 2, fill_slots=True) == 1
    # More than one shard fill whole waves of slots, as before the default filled them.
    assert shard_count(2_500_000, 1_000_000, 8) == 8
