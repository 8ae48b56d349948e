"""SEMANTICS A5: the paper's running example, end to end (golden fixture)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.oi_tree import plan_group

FIXTURE = Path(__file__).parent / "fixtures" / "paper_example"
TABLE_2 = [
    "e1 e2 e3 e4 e5 e6 e7", "e1 e2 e3 e4 e6 e5 e7", "e1 e2 e3 e5 e4 e6 e7",
    "e1 e2 e3 e5 e6 e4 e7", "e1 e2 e3 e5 e6 e7 e4", "e1 e3 e2 e4 e5 e6 e7",
    "e1 e3 e2 e4 e6 e5 e7", "e1 e3 e2 e5 e4 e6 e7", "e1 e3 e2 e5 e6 e4 e7",
    "e1 e3 e2 e5 e6 e7 e4",
]
TABLE_3 = [((1, 7), 1, (0, 60)), ((1, 1), 1, (1, 2)), ((2, 3), 2, (4, 10)),
           ((4, 7), 2, (13, 60)), ((5, 6), 2, (16, 22)), ((7, 7), 1, (29, 30))]


@pytest.fixture(scope="module")
def archive() -> pd.DataFrame:
    return pd.read_csv(FIXTURE / "archive.csv")


@pytest.fixture(scope="module")
def query_text() -> str:
    return (FIXTURE / "query.txt").read_text()


def test_exactly_the_ten_order_instances_of_table_2(archive):
    for multi in (True, False):
        forest = build_forest(plan_group(archive.t_lo, archive.t_hi, multi_tree=multi))
        orders = set()
        for oi in forest.order_instances():
            assert [t for _, t in oi] == list(range(1, 8))
            orders.add(" ".join(f"e{e + 1}" for e, _ in oi))
        assert orders == set(TABLE_2)


def test_tree_information_reproduces_table_3_under_the_paper_codes(archive):
    idx = uc.build_index(archive, codes="paper")
    forest = idx.forest("S_k")
    got = [(forest.tree_ti(t), int(forest.tree_fanout[t]), forest.tree_paper_range[t])
           for t in range(forest.n_trees)]
    assert got == TABLE_3


def test_paper_example_codes_of_section_5_1(archive):
    forest = uc.build_index(archive, codes="paper").forest("S_k")
    codes = {(int(forest.event[n]) + 1, int(forest.instant[n])): forest.paper_code[n]
             for n in range(forest.n_nodes) if forest.event[n] >= 0}
    assert codes[(3, 2)] == 6 and codes[(3, 3)] == 7 and codes[(4, 4)] == 14


@pytest.mark.parametrize("codes", ["compact", "paper"])
def test_fractions_of_order_instances(archive, codes):
    idx = uc.build_index(archive, codes=codes)
    assert idx.order_instance_fraction({"e3": 2}) == pytest.approx(0.5, abs=1e-12)
    assert idx.order_instance_fraction({"e3": 2, "e4": 4}) == pytest.approx(0.2, abs=1e-12)


@pytest.mark.parametrize("strategy", ["selectivity", "sequential", "tree_traversal",
                                      "possible_worlds"])
@pytest.mark.parametrize("codes", ["compact", "paper"])
@pytest.mark.parametrize("multi_tree", [True, False])
def test_answer_is_the_two_tuples_at_confidence_0_2(archive, query_text, strategy, codes,
                                                    multi_tree):
    idx = uc.build_index(archive, codes=codes, multi_tree=multi_tree)
    got = idx.query(query_text, strategy=strategy)
    want = pd.read_csv(FIXTURE / "expected.csv")
    assert [" ".join(e) for e in got["events"]] == list(want["events"])
    assert got["confidence"].tolist() == pytest.approx(want["confidence"].tolist(), abs=1e-9)
    assert got["t_first"].tolist() == want["t_first"].tolist()
    assert got["t_last"].tolist() == want["t_last"].tolist()
