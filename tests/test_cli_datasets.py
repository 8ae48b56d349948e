"""``uncertain-cep datasets list|generate|convert``: files equal to the generators' and
loaders' own output, PieStream's CSV layout, atomic writes and clean errors.

The real data live in ``shared/datasets`` beside the repository (``../shared/datasets``
from its root), located by ``tests/shared_data.py``; the tests that need them
skip when that directory is absent.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from shared_data import DODGERS, ICU, LPA, REPO

from uncertain_cep import cli
from uncertain_cep.datasets import (
    generate_office_rfid,
    generate_synthetic,
    load_dodgers,
    load_icu,
    load_localization,
)
from uncertain_cep.datasets.connected_car import generate_connected_car
from uncertain_cep.datasets.piestream import generate_piestream, read_piestream

SAMPLE = REPO / "datasets" / "sample" / "office_rfid.parquet"

# name -> (options, the generator, the same arguments as keywords, expected columns)
GENERATE: dict[str, tuple[list[str], Callable[..., pd.DataFrame], dict[str, Any], list[str]]] = {
    "office-rfid": (
        ["--people", "3", "--readings-per-person", "5", "--seed", "7"],
        generate_office_rfid, {"people": 3, "readings_per_person": 5, "seed": 7},
        ["event_id", "person", "t_lo", "t_hi", "x_lo", "x_hi", "y_lo", "y_hi", "tag"]),
    "synthetic": (
        ["--n", "200", "--groups", "3", "--d", "3", "--f", "1,4", "--clustered",
         "--cluster-spread", "0.05", "--value-width", "0.5", "--seed", "4"],
        generate_synthetic, {"n": 200, "groups": 3, "d": 3, "f": (1, 4), "clustered": True,
                             "cluster_spread": 0.05, "value_width": 0.5, "seed": 4},
        ["event_id", "group", "t_lo", "t_hi", "a0_lo", "a0_hi", "a1_lo", "a1_hi", "a2_lo",
         "a2_hi"]),
    "connected-car": (
        ["--cars", "3", "--seconds", "120", "--aggressive", "2", "--interleave", "--seed", "5"],
        generate_connected_car, {"cars": 3, "seconds": 120, "aggressive": 2.0,
                                 "interleave": True, "seed": 5},
        ["car_id", "time", "speed", "accel"]),
    "piestream": (
        ["--rows", "500", "--columns", "3", "--seed", "2"],
        generate_piestream, {"rows": 500, "columns": 3, "seed": 2},
        ["id", "a_1", "a_2", "a_3", "t1", "t2"]),
}

# name -> (the loader, its file, expected columns with --keep-labels where it applies)
CONVERT: dict[str, tuple[Callable[..., pd.DataFrame], Path, list[str]]] = {
    "dodgers": (load_dodgers, DODGERS,
                ["event_id", "group", "t_lo", "t_hi", "count_lo", "count_hi"]),
    "localization": (load_localization, LPA,
                     ["event_id", "group", "t_lo", "t_hi", "x_lo", "x_hi", "y_lo", "y_hi",
                      "z_lo", "z_hi", "sequence", "tag", "activity"]),
    "icu": (load_icu, ICU,
            ["event_id", "group", "t_lo", "t_hi", "code_lo", "code_hi", "value_lo",
             "value_hi"]),
}


def _read(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return pd.read_csv(path, float_precision="round_trip")
    return pd.read_parquet(path)


def _same(written: pd.DataFrame, expected: pd.DataFrame, suffix: str) -> None:
    expected = expected.copy()
    expected.attrs = {}
    # CSV keeps values, not dtypes (connected-car's int32 car_id comes back as int64).
    pd.testing.assert_frame_equal(written, expected, check_exact=True,
                                  check_dtype=suffix == ".parquet")


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------- generate
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("name", list(GENERATE))
def test_generate_writes_what_the_generator_returns(name, suffix, tmp_path, capsys):
    options, generator, kwargs, columns = GENERATE[name]
    out = tmp_path / "data" / f"{name}{suffix}"
    assert cli.main(["datasets", "generate", name, *options, "--out", str(out)]) == 0
    expected = generator(**kwargs)
    assert f"{len(expected)} rows of {name} written to {out}" in capsys.readouterr().out
    written = (read_piestream(out) if name == "piestream" and suffix == ".csv"
               else _read(out))
    assert list(written.columns) == columns
    assert len(written) == len(expected) > 0
    _same(written, expected, suffix)
    assert _temporaries(out.parent) == []


def test_piestream_csv_is_headerless_in_piestreams_layout(tmp_path):
    out = tmp_path / "events.csv"
    assert cli.main(["datasets", "generate", "piestream", "--rows", "30", "--columns", "2",
                     "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    expected = generate_piestream(30, 2)
    assert len(lines) == 30
    first = expected.iloc[0]
    assert lines[0] == f"1,{first.a_1},{first.a_2},1,2"
    pd.testing.assert_frame_equal(read_piestream(out), expected)


def test_generate_without_options_uses_the_generators_defaults(tmp_path):
    # office-rfid's defaults make the bundled sample archive.
    assert cli.main(["datasets", "generate", "office-rfid", "--out",
                     str(tmp_path / "o.parquet")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "o.parquet"),
                                  pd.read_parquet(SAMPLE), check_exact=True)
    # synthetic's n has no default in the generator: the CLI's is 10,000.
    assert cli.main(["datasets", "generate", "synthetic", "--out",
                     str(tmp_path / "s.parquet")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "s.parquet"),
                                  generate_synthetic(10_000), check_exact=True)


def test_generate_replaces_an_existing_file(tmp_path):
    out = tmp_path / "s.csv"
    out.write_text("old")
    assert cli.main(["datasets", "generate", "synthetic", "--n", "10", "--out", str(out)]) == 0
    _same(_read(out), generate_synthetic(10), ".csv")
    assert _temporaries(tmp_path) == []


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch,
                                                                   capsys):
    out = tmp_path / "s.parquet"
    assert cli.main(["datasets", "generate", "synthetic", "--n", "10", "--out", str(out)]) == 0
    before = out.read_bytes()

    def broken(self, path, *args, **kwargs):
        Path(path).write_text("partial")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    capsys.readouterr()
    # One line naming the user's file (not the hidden temporary one), exit 1.
    assert cli.main(["datasets", "generate", "synthetic", "--n", "20", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write the file {out}: disk full")
    assert err.count("\n") == 1
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.parquet"]


# -------------------------------------------------------------------------------- convert
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("name", list(CONVERT))
def test_convert_writes_what_the_loader_returns(shared, name, suffix, tmp_path, capsys):
    loader, path, columns = CONVERT[name]
    labels = ["--keep-labels"] if name == "localization" else []
    out = tmp_path / f"{name}{suffix}"
    assert cli.main(["datasets", "convert", name, str(path), "--n-events", "300",
                     "--instants", "2000", "--f", "1,4", "--groups", "2",
                     "--value-width", "0.3", "--seed", "3", *labels, "--out", str(out)]) == 0
    expected = loader(path, n_events=300, instants=2000, f=(1, 4), groups=2, value_width=0.3,
                      seed=3, **({"keep_labels": True} if labels else {}))
    printed = capsys.readouterr().out
    assert f"300 events of {name} from {path} written to {out}" in printed
    assert f"moved_instants={expected.attrs['moved_instants']}" in printed
    written = _read(out)
    assert list(written.columns) == columns
    assert len(written) == 300
    _same(written, expected, suffix)
    assert _temporaries(tmp_path) == []


def test_convert_without_options_uses_the_loaders_defaults(shared, tmp_path):
    out = tmp_path / "icu.parquet"
    assert cli.main(["datasets", "convert", "icu", str(ICU), "--out", str(out)]) == 0
    _same(pd.read_parquet(out), load_icu(ICU), ".parquet")


# --------------------------------------------------------------------------------- list
def test_list_names_every_dataset_with_its_options_and_defaults(capsys):
    assert cli.main(["datasets", "list"]) == 0
    printed = capsys.readouterr().out
    for name in [*GENERATE, *CONVERT]:
        assert f"\n  {name} " in printed
    for flag in ["--people N", "--readings-per-person N", "--n N", "--groups G", "--d D",
                 "--f LO,HI", "--clustered", "--cluster-spread S", "--value-width W",
                 "--cars N", "--seconds N", "--aggressive R", "--interleave", "--rows N",
                 "--columns K", "--n-events N", "--instants N", "--keep-labels", "--seed S"]:
        assert flag in printed
    assert "(default 20141124)" in printed  # office-rfid's seed
    assert "(default 2,5)" in printed and "(default 2,6)" in printed  # synthetic's, loaders' f
    assert "(default 10000)" in printed  # synthetic's n, required by the generator


# -------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("action", ["generate", "convert"])
def test_an_unknown_name_exits_2_listing_the_valid_names(action, tmp_path, capsys):
    args = ["datasets", action, "tpstream", *(["input.csv"] if action == "convert" else []),
            "--out", str(tmp_path / "x.parquet")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "'tpstream'" in err
    valid = ["office-rfid", "synthetic", "connected-car", "piestream"] if action == "generate" \
        else ["dodgers", "localization", "icu"]
    assert all(f"'{name}'" in err for name in valid)
    assert list(tmp_path.iterdir()) == []


def test_a_name_of_the_other_action_points_to_it(tmp_path, capsys):
    assert cli.main(["datasets", "generate", "dodgers", "--out", str(tmp_path / "x.csv")]) == 2
    assert "datasets convert dodgers" in capsys.readouterr().err
    assert cli.main(["datasets", "convert", "synthetic", "in.csv", "--out",
                     str(tmp_path / "x.csv")]) == 2
    assert "datasets generate synthetic" in capsys.readouterr().err


def test_an_unknown_extension_exits_2_before_generating(tmp_path, monkeypatch, capsys):
    @functools.wraps(generate_synthetic)  # the same signature, so the same defaults
    def never(*args, **kwargs):
        raise AssertionError("generated before the output path was checked")

    monkeypatch.setattr("uncertain_cep.datasets.synthetic.generate_synthetic", never)
    with pytest.raises(SystemExit) as e:
        cli.main(["datasets", "generate", "synthetic", "--out", str(tmp_path / "x.json")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument --out:" in err and "x.json" in err
    assert ".parquet" in err and ".csv" in err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_extension_exits_2_before_converting(tmp_path, monkeypatch, capsys):
    @functools.wraps(load_icu)
    def never(*args, **kwargs):
        raise AssertionError("loaded before the output path was checked")

    monkeypatch.setattr("uncertain_cep.datasets.uci.load_icu", never)
    with pytest.raises(SystemExit) as e:
        cli.main(["datasets", "convert", "icu", str(ICU), "--out", str(tmp_path / "icu.txt")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument --out:" in err and "icu.txt" in err and ".parquet" in err
    assert list(tmp_path.iterdir()) == []


def test_a_missing_input_file_exits_1_naming_it(tmp_path, capsys):
    missing = tmp_path / "Dodgers.data"
    assert cli.main(["datasets", "convert", "dodgers", str(missing), "--out",
                     str(tmp_path / "d.parquet")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and str(missing) in err and "does not exist" in err
    assert list(tmp_path.iterdir()) == []


def test_an_option_of_another_dataset_exits_2_listing_the_valid_ones(tmp_path, capsys):
    assert cli.main(["datasets", "generate", "synthetic", "--cars", "3", "--out",
                     str(tmp_path / "x.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--cars" in err and "synthetic" in err
    assert "--n," in err and "--clustered" in err
    assert cli.main(["datasets", "convert", "icu", str(ICU), "--keep-labels", "--out",
                     str(tmp_path / "x.parquet")]) == 2
    assert "--keep-labels" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", [["--n", "0"], ["--f", "5,2"], ["--f", "2"],
                                    ["--value-width", "-1"], ["--groups", "many"]])
def test_a_malformed_option_value_exits_2(option, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["datasets", "generate", "synthetic", *option, "--out",
                  str(tmp_path / "x.parquet")])
    assert exit_.value.code == 2
    assert f"error: argument {option[0]}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_value_the_generator_rejects_exits_2(tmp_path, capsys):
    assert cli.main(["datasets", "generate", "connected-car", "--aggressive", "100", "--out",
                     str(tmp_path / "c.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: connected-car:") and "aggressive" in err
    assert list(tmp_path.iterdir()) == []


def test_errors_in_a_real_process_exit_2_without_a_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "uncertain_cep.cli", "datasets", "generate", "tpstream",
         "--out", str(tmp_path / "x.parquet")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and "'tpstream'" in proc.stderr
    assert "Traceback" not in proc.stderr
