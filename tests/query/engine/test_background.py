"""Work on spare threads (query/engine/background.py): every result comes back once, to the
thread that submitted it, errors included; and the engine's answers and counters are
the same whether its negation programmes run there or in line."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from unittest.mock import patch

import pytest
from answer_checks import assert_same_answer
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives
from test_batch_engine import two_negations_in_one_gap

import uncertain_cep as uc
from uncertain_cep.query.engine import background, batch_engine
from uncertain_cep.query.engine.background import Background


@pytest.mark.parametrize("threads", [0, 1, 3])
@pytest.mark.parametrize("most_queued", [1, 4, 100])
def test_every_result_comes_back_once_with_its_tag(threads, most_queued):
    work = Background(threads, most_queued)
    for i in range(40):
        work.submit(lambda i=i: i * i, i)
    got = work.finished()
    got += work.finish()
    assert sorted((tag, result) for tag, result, _ in got) == [(i, i * i) for i in range(40)]
    assert all(seconds >= 0 for *_, seconds in got)


def test_a_task_a_spare_thread_is_stuck_in_is_run_again_by_the_submitter():
    # The spare thread holds the task until released; finish() runs a copy and returns
    # its result once, without waiting for the stuck one.
    release = threading.Event()
    runs: list[str] = []

    def stuck() -> str:
        runs.append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            release.wait(10)
        return "done"

    work = Background(1)
    work.submit(stuck, "t")
    while not runs:
        time.sleep(0.001)
    assert [(tag, result) for tag, result, _ in work.finish()] == [("t", "done")]
    release.set()
    assert len(runs) == 2 and threading.main_thread().name in runs
    assert work.finished() == []


@pytest.mark.parametrize("threads", [0, 2])
def test_an_error_in_the_work_is_raised_to_the_submitter(threads):
    def fails() -> None:
        raise ValueError("bad rows")

    work = Background(threads)
    work.submit(fails, "x")
    with pytest.raises(ValueError, match="bad rows"):
        work.finish()


def test_past_most_queued_the_submitter_runs_work_itself():
    # No spare thread takes work before the third is queued: they wait on a lock.
    gate = threading.Lock()
    names: list[str] = []

    def task() -> None:
        with gate:
            names.append(threading.current_thread().name)

    work = Background(1, most_queued=2)
    with gate:
        for i in range(2):
            work.submit(task, i)
    work.submit(task, 2)        # the third: over the bound, run in this thread
    assert threading.current_thread().name in names
    assert len(work.finish()) == 3


@settings(max_examples=25, deadline=None)
@given(df=archives(max_groups=3), pattern=two_negations_in_one_gap(),
       limit=st.integers(2, 8), spare=st.sampled_from([1, 2]))
def test_negation_in_the_background_gives_the_same_answer_and_counters(df, pattern, limit,
                                                                      spare):
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df)
    pattern = replace(pattern, confidence=0.05)
    with (patch.object(batch_engine, "TUPLE_RATIO", 0),
          patch.object(batch_engine, "BATCH_LIMIT", limit)):
        with patch.object(batch_engine, "spare_threads", lambda: 0):
            inline = idx.query(pattern)
        with patch.object(batch_engine, "spare_threads", lambda: spare):
            spared = idx.query(pattern)
    assert_same_answer(spared, inline)
    assert_same_answer(spared, idx.query(pattern, strategy="possible_worlds"))
    steps = [(s.step, s.created, s.kept, s.candidates) for s in inline.stats.steps]
    assert [(s.step, s.created, s.kept, s.candidates) for s in spared.stats.steps] == steps
    assert spared.stats.entries_created == inline.stats.entries_created


def test_spare_threads_are_one_fewer_than_numbas():
    import numba
    assert background.spare_threads() == numba.get_num_threads() - 1
