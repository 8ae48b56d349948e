"""The archives the project ships, saved as shards and reopened, answer as they do whole:
the paper's running example, and the office RFID sample under Condition 2 (walking
speed), each with shards of a few events, so that groups are cut wherever the rule
allows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from answer_checks import assert_same_answer

import uncertain_cep as uc
from uncertain_cep.index.store.manifest_check import read_manifest

FIXTURES = Path(__file__).parents[2] / "fixtures"
SAMPLE = Path(uc.__file__).parent / "sample" / "office_rfid.parquet"

OFFICE_QUERIES = [
    "PATTERN SEQ(W, E) DEFINE W AS x < 5, E AS x >= 25 WITHIN 4 CONFIDENCE 0.2",
    "PATTERN SEQ(A, NOT C, B) DEFINE A AS tag = 'Room 403', C AS tag = 'Room 405', "
    "B AS tag = 'Room 407' WITHIN 40",
    "PATTERN SEQ(A, B) DEFINE A AS y < 0, B AS y >= 0 WITHIN 30 CONFIDENCE 0.2",
]


def test_the_running_example_is_one_cluster_and_stays_one_shard(tmp_path) -> None:
    # Its intervals overlap in a chain from e1 to e7 (the paper's isolated subsequences
    # appear only once Lemma 1 narrows them): no cut between clusters exists.
    idx = uc.build_index(FIXTURES / "paper_example" / "archive.csv")
    query = (FIXTURES / "paper_example" / "query.txt").read_text()
    idx.save(tmp_path / "ix", shard_events=2)
    assert len(read_manifest(tmp_path / "ix").shards) == 1
    assert_same_answer(uc.open_index(tmp_path / "ix").query(query), idx.query(query))


@pytest.mark.parametrize("shard_events", [25, 120])
def test_the_office_sample_saved_as_shards_answers_as_it_does_whole(tmp_path,
                                                                   shard_events) -> None:
    idx = uc.build_index(pd.read_parquet(SAMPLE), group_by="person", max_speed=2.0)
    idx.save(tmp_path / "ix", shard_events=shard_events)
    shards = read_manifest(tmp_path / "ix").shards
    assert len(shards) >= 480 // shard_events // 2
    reopened = uc.open_index(tmp_path / "ix")
    for query in OFFICE_QUERIES:
        want = idx.query(query)
        assert len(want), query
        assert_same_answer(reopened.query(query), want)
