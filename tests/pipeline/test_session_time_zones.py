"""A Spark session's time zone never moves an instant (issue "No wrong answer at the
edges", item 1): every source, built in a session of any zone, answers the in-process
build's instants, on classic Spark (here) and on Spark Connect (test_spark_connect.py)."""

from __future__ import annotations

from zone_cases import ZONES, check_every_source, check_matches_in_every_zone


def test_every_source_in_sessions_of_any_zone_answers_the_in_process_instants(spark,
                                                                              tmp_path):
    done = check_every_source(spark, tmp_path)
    assert len(done) == 4 + len(ZONES) - 1


def test_part_b_matches_on_spark_answer_the_same_instants_in_every_session_zone(spark):
    assert check_matches_in_every_zone(spark) == len(ZONES)


# The same cases on Spark Connect run in tests/pipeline/test_spark_connect.py, beside its
# other checks, in the one Connect server that file starts.
