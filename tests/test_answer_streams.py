"""Answers of any size (issue 48): streamed to Parquet parts or record batches as they
are found, read back equal to the in-memory answer (and the possible-worlds oracle) on
random archives; an interrupted stream leaves nothing in place."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from answer_checks import assert_same_answer, cases
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.answer_streams import AnswerBatches
from uncertain_cep.query.evaluation.answer import Answer

QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 4, B AS x >= 2 WITHIN 6"


def _many_rows(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"event_id": [f"e{i}" for i in range(n)],
                         "group": [i % 4 for i in range(n)], "t_lo": range(n),
                         "t_hi": [i + 2 for i in range(n)],
                         "x": [float(i % 7) for i in range(n)]})


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=10)
@given(case=cases(condition2=False), part_rows=st.integers(1, 5))
def test_a_streamed_answer_read_back_is_the_in_memory_answer(tmp_path_factory, strategy,
                                                             case, part_rows):
    df, pattern, _, codes, layout = case
    note(str(pattern))
    idx = uc.build_index(df, codes=codes, multi_tree=layout == "multi")
    want = idx.query(pattern, strategy=strategy)
    event(f"parts: {min(-(-len(want) // part_rows), 4)}")
    event(f"negation: {bool(pattern.negations)}")
    out = tmp_path_factory.mktemp("stream") / "answer"
    summary = idx.query(pattern, strategy=strategy, out=out, part_rows=part_rows)
    assert summary.rows == len(want) and summary.path == out
    files = sorted(out.iterdir())
    assert len(files) == summary.parts == max(1, -(-len(want) // part_rows))
    for f in files:
        rows = pq.read_table(f).num_rows
        assert rows <= part_rows
    got = uc.read_answer(out)
    pd.testing.assert_frame_equal(got, pd.DataFrame(want), check_exact=True)
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))
    # Record batches: the same rows, each batch in the answer's order.
    batches = list(idx.iter_query(pattern, strategy=strategy, batch_rows=part_rows))
    assert all(b.num_rows <= part_rows for b in batches)
    streamed = [tuple(e) for b in batches for e in b.column("events").to_pylist()]
    assert sorted(streamed) == sorted(want["events"])
    for b in batches:
        # In the answer's order: confidence as it rounds to 12 decimals, descending.
        conf = [round(c, 12) for c in b.column("confidence").to_pylist()]
        assert conf == sorted(conf, reverse=True)


def test_each_part_is_in_the_answer_s_order_and_its_metadata_says_parts_are_not(tmp_path):
    idx = uc.build_index(_many_rows())
    summary = idx.query(QUERY, out=tmp_path / "a", part_rows=7)
    full = idx.query(QUERY)
    assert summary.parts > 2
    for f in sorted((tmp_path / "a").iterdir()):
        table = pq.read_table(f)
        meta = table.schema.metadata[b"uncertain_cep.answer"].decode()
        assert '"order": "within row groups"' in meta and "not across row groups" in meta
        part = uc.read_answer(f)
        rank = {e: i for i, e in enumerate(full["events"])}
        assert [rank[e] for e in part["events"]] == sorted(rank[e] for e in part["events"])
        # One column per positive item beside the list of ids.
        assert table.column_names == ["events", "A", "B", "confidence", "t_first", "t_last"]


def test_streamed_datetimes_come_back_in_the_archive_s_zone(tmp_path):
    df = _many_rows(20)
    start = pd.Timestamp("2024-03-31 00:59:50", tz="Europe/Berlin")
    df["t_lo"] = start + pd.to_timedelta(df["t_lo"], unit="s")
    df["t_hi"] = start + pd.to_timedelta(df["t_hi"], unit="s")
    idx = uc.build_index(df, time_unit="1s")
    want = idx.query(QUERY.replace("WITHIN 6", "WITHIN 6s"))
    idx.query(QUERY.replace("WITHIN 6", "WITHIN 6s"), out=tmp_path / "a", part_rows=5)
    got = uc.read_answer(tmp_path / "a")
    pd.testing.assert_frame_equal(got, pd.DataFrame(want), check_exact=True)


def test_limit_and_an_empty_answer_stream_too(tmp_path):
    idx = uc.build_index(_many_rows())
    summary = idx.query(QUERY + " LIMIT 5", out=tmp_path / "top", part_rows=2)
    assert summary.rows == 5
    assert [b.num_rows for b in idx.iter_query(QUERY + " LIMIT 5", batch_rows=2)] == [2, 2, 1]
    pd.testing.assert_frame_equal(uc.read_answer(tmp_path / "top"),
                                  pd.DataFrame(idx.query(QUERY).head(5)), check_exact=True)
    none = "PATTERN SEQ(A, B) DEFINE A AS x > 100 WITHIN 6"
    assert idx.query(none, out=tmp_path / "none").rows == 0
    empty = uc.read_answer(tmp_path / "none")
    assert len(empty) == 0 and list(empty.columns) == ["events", "confidence", "t_first",
                                                       "t_last"]
    assert list(idx.iter_query(none)) == []


def test_out_replaces_an_earlier_answer_but_never_other_files(tmp_path):
    idx = uc.build_index(_many_rows())
    idx.query(QUERY, out=tmp_path / "a", part_rows=3)
    idx.query(QUERY + " LIMIT 2", out=tmp_path / "a")
    assert len(uc.read_answer(tmp_path / "a")) == 2
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(uc.InputError, match="not an answer directory"):
        idx.query(QUERY, out=tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "mine"]   # no drafts left
    for bad in (0, -3, 1.5):
        with pytest.raises(uc.InputError, match="part_rows"):
            idx.query(QUERY, out=tmp_path / "b", part_rows=bad)
        with pytest.raises(uc.InputError, match="batch_rows"):
            idx.iter_query(QUERY, batch_rows=bad)


def test_leaving_a_batch_loop_early_stops_the_search_thread():
    started = threading.Event()

    def search(deliver):
        started.set()
        for i in range(10_000):
            deliver(Answer.concat([], 1))
            if i > 5:
                time.sleep(0.01)

    batches = AnswerBatches(search, lambda a: pa.record_batch({"n": [len(a)]}))
    for _ in iter(batches):
        break
    batches.close()
    assert started.is_set() and not batches._thread.is_alive()


def test_an_error_in_the_search_reaches_the_consumer():
    def search(deliver):
        deliver(Answer.concat([], 1))
        raise ValueError("broken kernel")

    batches = AnswerBatches(search, lambda a: pa.record_batch({"n": [len(a)]}))
    with pytest.raises(ValueError, match="broken kernel"):
        list(batches)


CHILD = textwrap.dedent("""
    import sys
    import numpy as np, pandas as pd, uncertain_cep as uc
    rng = np.random.default_rng(0)
    n = 2000
    lo = rng.integers(0, 2000, n)
    idx = uc.build_index(pd.DataFrame({"event_id": range(n), "group": rng.integers(0, 200, n),
                                       "t_lo": lo, "t_hi": lo + rng.integers(0, 20, n),
                                       "x": rng.uniform(0, 10, n)}))
    idx.query("PATTERN SEQ(A, B) DEFINE A AS x < 1, B AS x > 9 WITHIN 5", out=sys.argv[1])
    print("started", flush=True)
    try:
        idx.query("PATTERN SEQ(A, B, C) DEFINE A AS x < 5, B AS x >= 2, C AS x > 3 "
                  "WITHIN 50", out=sys.argv[1], part_rows=20000)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


def test_ctrl_c_while_streaming_leaves_no_draft_and_the_older_answer_whole(tmp_path):
    out = tmp_path / "answer"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "started"
        before = uc.read_answer(out)
        # Interrupted once parts are being written into the draft.
        deadline = time.monotonic() + 120
        while not any(tmp_path.glob(".answer.draft-*/answer-*.parquet")):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        assert proc.stdout.readline().strip() == "interrupted"
        assert time.perf_counter() - sent < 5.0
        assert proc.wait(30) == 0
    finally:
        proc.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answer"]
    pd.testing.assert_frame_equal(uc.read_answer(out), before, check_exact=True)
