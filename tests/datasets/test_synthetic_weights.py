"""The synthetic generator draws instant weights on request (SEMANTICS A6): valid ones,
whose true instants keep weight (so every group keeps a world), readable by the weights
reader and answerable by the possible-worlds baseline; an unknown kind lists the valid."""

from __future__ import annotations

import numpy as np
import pytest

import uncertain_cep as uc
from uncertain_cep.cli import main
from uncertain_cep.datasets.office_rfid import generate_office_rfid
from uncertain_cep.datasets.synthetic import generate_synthetic
from uncertain_cep.model.events import read_archive
from uncertain_cep.query.baselines.possible_worlds import possible_worlds_answer
from uncertain_cep.query.language.parse import parse_query

QUERY = "PATTERN SEQ(A, B) DEFINE A AS a0 < 0, B AS a0 >= 0 WITHIN 6"


@pytest.mark.parametrize("kind", ["normal", "list"])
def test_generated_weights_are_valid_and_every_group_keeps_a_world(kind):
    df = generate_synthetic(24, groups=3, d=1, seed=5, weights=kind)
    archive = read_archive(df, weighted=True)
    w = archive.instant_weights
    assert w is not None and w.weighted.all()
    if kind == "list":
        sizes = w.start[1:] - w.start[:-1]
        assert (sizes == archive.t_hi - archive.t_lo + 1).all()
        assert (w.values == 0).any() and (w.values > 0).any()
    answer = possible_worlds_answer(archive, parse_query(QUERY))
    plain = possible_worlds_answer(read_archive(df.drop(columns=[
        c for c in ("t_mu", "t_sigma", "t_weights") if c in df.columns])), parse_query(QUERY))
    assert answer and {m.events for m in answer} <= {m.events for m in plain}
    assert any(abs(m.confidence - p.confidence) > 1e-6 for m in answer for p in plain
               if m.events == p.events)


def test_the_command_line_writes_weights_and_refuses_an_unknown_kind(tmp_path, capsys):
    out = tmp_path / "w.parquet"
    assert main(["datasets", "generate", "synthetic", "--n", "50", "--weights", "normal",
                 "--out", str(out)]) == 0
    import pandas as pd
    df = pd.read_parquet(out)
    assert {"t_mu", "t_sigma"} <= set(df.columns) and np.isfinite(df["t_mu"]).all()
    assert uc.build_index(df).describe().weighted_events == 50
    assert main(["datasets", "generate", "synthetic", "--n", "5", "--weights", "uniform",
                 "--out", str(tmp_path / "x.parquet")]) != 0
    assert "normal" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["normal", "list"])
def test_the_sample_generator_draws_weights_without_changing_its_rows(kind):
    plain = generate_office_rfid(people=3, readings_per_person=30, seed=4)
    weighted = generate_office_rfid(people=3, readings_per_person=30, seed=4, weights=kind)
    assert weighted[plain.columns].equals(plain)
    # The true trajectory keeps a positive weight: every group indexes, under Condition 2.
    idx = uc.build_index(weighted, group_by="person", max_speed=2.0)
    assert idx.describe().weighted_events == len(plain)
