"""A weighted index (SEMANTICS A6) written and opened again, in one directory or in
shards, answers as the index in memory on every strategy, the baselines included
(they rebuild the forests from the weights the index stored: normals as ``t_mu`` and
``t_sigma``, other weights as lists)."""

from __future__ import annotations

import tempfile

import pyarrow.parquet as pq
import pytest
from answer_checks import assert_same_answer
from hypothesis import given, note, settings
from hypothesis import strategies as st
from random_archives import archives, instant_weights, patterns

import uncertain_cep as uc
from uncertain_cep.datasets.synthetic import generate_synthetic
from uncertain_cep.index.store.working_copy import CACHE_ENV


@settings(max_examples=10)
@given(df=archives(), data=st.data())
def test_a_weighted_index_read_back_answers_as_in_memory(df, data):
    weighted = data.draw(instant_weights(df))
    pattern = data.draw(patterns(("x", "y") if "y_lo" in df.columns else ("x",), min_items=1))
    note(str(pattern))
    try:
        idx = uc.build_index(weighted)
    except uc.InputError:
        return          # no world of positive weight: tested with the strategies
    shards = data.draw(st.sampled_from([None, 2, 5]))
    cold = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        idx.save(tmp + "/ix", shard_events=shards)
        if cold:
            # A host without the build's working copy: probabilities derived on expansion.
            mp.setenv(CACHE_ENV, tmp + "/cold-cache")
        back = uc.open_index(tmp + "/ix")
        for strategy in ("selectivity", "tree_traversal", "possible_worlds"):
            assert_same_answer(back.query(pattern, strategy=strategy),
                               idx.query(pattern, strategy=strategy))


def test_normal_weights_are_stored_as_their_parameters_and_probabilities_not_at_all(tmp_path):
    df = generate_synthetic(200, groups=4, seed=3, weights="normal")
    uc.build_index(df).save(tmp_path / "ix")
    (part,) = (tmp_path / "ix" / "events").glob("*.parquet")
    table = pq.read_table(part, columns=["t_mu", "t_sigma", "t_weights"])
    assert table.column("t_weights").null_count == len(df)
    assert table.column("t_mu").null_count == 0 and table.column("t_sigma").null_count == 0
    # The node probabilities follow from the weights: not stored.
    assert not {"poi", "cond"} & set(pq.read_schema(tmp_path / "ix" / "packed" /
                                                    "nodes.parquet").names)
