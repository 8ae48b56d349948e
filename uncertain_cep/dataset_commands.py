"""``uncertain-cep datasets list | generate NAME | convert NAME INPUT``.

The archive generators and real-data loaders of :mod:`uncertain_cep.datasets` on the
command line. One table per subcommand names each dataset's function and the keyword
arguments it exposes; the options, their help and ``datasets list`` come from that table
and from the functions' own signatures (defaults cannot drift from the code). Names are
validated by :class:`~uncertain_cep.errors.ParamEnum`, unknown extensions are refused
before any work, and files are written atomically.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from uncertain_cep.errors import ParamEnum
from uncertain_cep.files import write_table

__all__ = ["GeneratedDataset", "RealDataset", "add_datasets_parser", "count_argument",
           "table_path_argument"]


def add_datasets_parser(sub: Any) -> None:
    """Add ``datasets`` and its actions to the CLI's subparsers ``sub``."""
    datasets = sub.add_parser("datasets", help="list, generate or convert archives")
    actions = datasets.add_subparsers(required=True, metavar="ACTION")
    lister = actions.add_parser("list", help="the generators and loaders with their options")
    lister.set_defaults(run=_datasets_list)
    generate = actions.add_parser(
        "generate", help="write a generated archive to .parquet or .csv",
        epilog="Defaults differ per dataset: see `uncertain-cep datasets list`.")
    generate.add_argument("name", metavar="NAME", help=", ".join(m.value for m in GeneratedDataset))
    generate.add_argument("--out", required=True, metavar="FILE", type=table_path_argument,
                          help="file to write, .parquet or .csv")
    _add_dataset_options(generate, _GENERATED)
    generate.set_defaults(run=_datasets_generate)
    convert = actions.add_parser(
        "convert", help="turn an original UCI file into an uncertain archive",
        epilog="Defaults differ per dataset: see `uncertain-cep datasets list`.")
    convert.add_argument("name", metavar="NAME", help=", ".join(m.value for m in RealDataset))
    convert.add_argument("input", metavar="INPUT", help="the data set's original file")
    convert.add_argument("--out", required=True, metavar="FILE", type=table_path_argument,
                         help="file to write, .parquet or .csv")
    _add_dataset_options(convert, _REAL)
    convert.set_defaults(run=_datasets_convert)


class GeneratedDataset(ParamEnum):
    """The archives ``uncertain-cep datasets generate`` makes."""

    office_rfid = "office-rfid"
    synthetic = "synthetic"
    connected_car = "connected-car"
    piestream = "piestream"


class RealDataset(ParamEnum):
    """The real data sets ``uncertain-cep datasets convert`` reads (Zhou et al. 6.1)."""

    dodgers = "dodgers"
    localization = "localization"
    icu = "icu"


def table_path_argument(text: str) -> str:
    """An argparse type: a table file to write, ``.parquet`` or ``.csv``."""
    if Path(text).suffix not in (".parquet", ".csv"):
        raise argparse.ArgumentTypeError(f"{text} must end in .parquet or .csv")
    return text


def count_argument(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is not an integer >= {minimum}")
        return value

    return parse


def _nonnegative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number >= 0")
    return value


def _int_pair(text: str) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not LO,HI (two integers, e.g. 2,5)") from None
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"{text!r} needs 1 <= LO <= HI")
    return lo, hi


@dataclass(frozen=True)
class _Option:
    """One keyword argument of a generator or loader, as a command-line option."""

    keyword: str
    metavar: str | None  # None: a flag, False unless given
    help: str
    type: Callable[[str], Any] = int

    @property
    def flag(self) -> str:
        return "--" + self.keyword.replace("_", "-")


_OPTIONS = {o.keyword: o for o in [
    _Option("people", "N", "number of people, one dependency group each", count_argument(1)),
    _Option("readings_per_person", "N", "readings per person", count_argument(1)),
    _Option("n", "N", "number of events", count_argument(1)),
    _Option("groups", "G", "dependency groups, events assigned at random", count_argument(1)),
    _Option("d", "D", "number of Gaussian attributes a0 .. a{D-1}", count_argument(0)),
    _Option("f", "LO,HI", "possible instants per event, drawn from LO..HI", _int_pair),
    _Option("clustered", None, "timestamps in 10 Gaussian clusters instead of uniform"),
    _Option("cluster_spread", "S", "a cluster's standard deviation / the time domain",
            _nonnegative),
    _Option("value_width", "W", "a value's largest half-width, in standard deviations",
            _nonnegative),
    _Option("cars", "N", "number of cars", count_argument(1)),
    _Option("seconds", "N", "seconds each car reports", count_argument(1)),
    _Option("aggressive", "R", "expected aggressive episodes per car and minute", _nonnegative),
    _Option("interleave", None, "rows by (time, car_id), as a live feed, not (car_id, time)"),
    _Option("rows", "N", "number of point events (instants)", count_argument(1)),
    _Option("columns", "K", "number of situation streams a_1 .. a_K", count_argument(1)),
    _Option("n_events", "N", "events taken from the start of the file", count_argument(1)),
    _Option("instants", "N", "size of the time domain", count_argument(1)),
    _Option("keep_labels", None, "also keep sequence, tag and activity as string columns"),
    _Option("weights", "KIND", "instant weights per event (SEMANTICS A6): normal (t_mu, "
            "t_sigma) or list (t_weights)", str),
    _Option("seed", "S", "seed of the random generator", int),
]}


@dataclass(frozen=True)
class _Dataset:
    """A generator or loader: ``module:function``, what it makes, its options."""

    function: str
    summary: str
    options: tuple[str, ...]
    # Defaults for the function's required parameters (the others default as it does).
    required: dict[str, Any] = field(default_factory=dict)

    def load(self) -> Callable[..., pd.DataFrame]:
        module, _, name = self.function.partition(":")
        fn: Callable[..., pd.DataFrame] = getattr(importlib.import_module(module), name)
        return fn

    def defaults(self) -> dict[str, Any]:
        params = inspect.signature(self.load()).parameters
        return {k: (self.required[k] if params[k].default is inspect.Parameter.empty
                    else params[k].default) for k in self.options}


_GENERATED = {
    GeneratedDataset.office_rfid.value: _Dataset(
        "uncertain_cep.datasets.office_rfid:generate_office_rfid",
        "people walking between office rooms, read by RFID readers (the bundled sample)",
        ("people", "readings_per_person", "weights", "seed")),
    GeneratedDataset.synthetic.value: _Dataset(
        "uncertain_cep.datasets.synthetic:generate_synthetic",
        "Zhou et al.'s synthetic events: Gaussian attributes, uniform or clustered times",
        ("n", "groups", "d", "f", "clustered", "cluster_spread", "value_width", "weights",
         "seed"),
        {"n": 10_000}),
    GeneratedDataset.connected_car.value: _Dataset(
        "uncertain_cep.datasets.connected_car:generate_connected_car",
        "speed and acceleration per car and second, with aggressive-driving episodes",
        ("cars", "seconds", "aggressive", "interleave", "seed")),
    GeneratedDataset.piestream.value: _Dataset(
        "uncertain_cep.datasets.piestream:generate_piestream",
        "PieStream's benchmark input: K boolean situation streams (.csv: PieStream's layout)",
        ("rows", "columns", "seed"), {"rows": 100_000}),
}
_LOADER_OPTIONS = ("n_events", "instants", "f", "groups", "value_width", "seed")
_REAL = {
    RealDataset.dodgers.value: _Dataset(
        "uncertain_cep.datasets.uci:load_dodgers",
        "Dodgers Loop Sensor (Dodgers.data): cars per 5 minutes; -1 rows are skipped",
        _LOADER_OPTIONS),
    RealDataset.localization.value: _Dataset(
        "uncertain_cep.datasets.uci:load_localization",
        "Localization Data for Person Activity (ConfLongDemo_JSI.txt or its .csv): x, y, z",
        (*_LOADER_OPTIONS, "keep_labels")),
    RealDataset.icu.value: _Dataset(
        "uncertain_cep.datasets.uci:load_icu",
        "ICU monitor data (AIM-94 Monitor-Data): code and value, unwrapped at midnight",
        _LOADER_OPTIONS),
}


def _add_dataset_options(parser: argparse.ArgumentParser, table: dict[str, _Dataset]) -> None:
    """One option per keyword of the table's functions; an option not given is absent
    from the namespace (so the function's own default applies)."""
    keywords = dict.fromkeys(k for spec in table.values() for k in spec.options)
    for keyword in keywords:
        option = _OPTIONS[keyword]
        users = [name for name, spec in table.items() if keyword in spec.options]
        where = "all" if len(users) == len(table) else ", ".join(users)
        if option.metavar is None:
            parser.add_argument(option.flag, dest=keyword, action="store_true",
                                default=argparse.SUPPRESS, help=f"{option.help} ({where})")
        else:
            parser.add_argument(option.flag, dest=keyword, type=option.type,
                                metavar=option.metavar, default=argparse.SUPPRESS,
                                help=f"{option.help} ({where})")


def _dataset_arguments(args: argparse.Namespace, name: str, spec: _Dataset,
                       table: dict[str, _Dataset]) -> dict[str, Any]:
    """The keyword arguments for ``spec``: its defaults, overridden by the options given;
    an option of another dataset is an error."""
    from uncertain_cep.errors import UsageError

    keywords = {k for other in table.values() for k in other.options}
    given = {k: getattr(args, k) for k in sorted(keywords) if hasattr(args, k)}
    foreign = [_OPTIONS[k].flag for k in given if k not in spec.options]
    if foreign:
        valid = ", ".join(_OPTIONS[k].flag for k in spec.options)
        raise UsageError(f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'}"
                                 f" not {'an option' if len(foreign) == 1 else 'options'} of "
                                 f"{name}; its options are {valid}")
    return {**spec.defaults(), **given}


def _call(name: str, function: Callable[..., pd.DataFrame], *args: Any,
          **kwargs: Any) -> pd.DataFrame:
    """``function(*args, **kwargs)``, a ValueError about the arguments (an option value
    the generator cannot take) becoming a clean :class:`~uncertain_cep.errors.UsageError`."""
    from uncertain_cep.errors import UncertainCepError, UsageError

    try:
        return function(*args, **kwargs)
    except UncertainCepError:
        raise
    except ValueError as e:
        raise UsageError(f"{name}: {e}") from e


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def _datasets_list(args: argparse.Namespace) -> int:
    sections = [
        ("Generated archives", "uncertain-cep datasets generate NAME --out FILE.parquet|.csv "
                               "[options]", _GENERATED),
        ("Real data sets", "uncertain-cep datasets convert NAME INPUT --out FILE.parquet|.csv "
                           "[options]", _REAL),
    ]
    for i, (title, usage, table) in enumerate(sections):
        print(("\n" if i else "") + f"{title}: {usage}")
        for name, spec in table.items():
            print(f"\n  {name:<15}{spec.summary}")
            defaults = spec.defaults()
            for keyword in spec.options:
                option = _OPTIONS[keyword]
                if option.metavar is None:  # a flag, off unless given
                    print(f"      {option.flag:<28}{option.help}")
                else:
                    flag = f"{option.flag} {option.metavar}"
                    print(f"      {flag:<28}{option.help} (default {_show(defaults[keyword])})")
    return 0


def _datasets_generate(args: argparse.Namespace) -> int:
    name, spec, kwargs, target = _dataset_job(args, GeneratedDataset, _GENERATED, _REAL,
                                              "`uncertain-cep datasets convert {} INPUT`",
                                              "a real data set")
    frame = _call(name, spec.load(), **kwargs)
    frame.attrs = {}
    # PieStream reads headerless CSV lines id, a_1 .. a_k, t1, t2 (the frame's columns).
    write_table(frame, target, csv_header=name != GeneratedDataset.piestream.value)
    print(f"{len(frame)} rows of {name} written to {target}")
    return 0


def _datasets_convert(args: argparse.Namespace) -> int:
    name, spec, kwargs, target = _dataset_job(args, RealDataset, _REAL, _GENERATED,
                                              "`uncertain-cep datasets generate {}`",
                                              "generated")
    frame = _call(name, spec.load(), args.input, **kwargs)
    facts = ", ".join(f"{k}={v}" for k, v in frame.attrs.items()
                      if k not in ("source", "std"))
    frame.attrs = {}
    write_table(frame, target)
    print(f"{len(frame)} events of {name} from {args.input} written to {target} ({facts})")
    return 0


def _dataset_job(args: argparse.Namespace, names: Any, specs: Any, others: Any, hint: str,
                 kind: str) -> tuple[str, Any, dict[str, Any], Path]:
    """The checked name, its spec, its keyword arguments and the output path; a name of
    the other subcommand gets a pointer to it."""
    from uncertain_cep.errors import InvalidOptionError, UsageError

    try:
        name = names.get_value(args.name)
    except InvalidOptionError as e:
        if args.name in others:
            raise UsageError(f"{e}; {args.name} is {kind}, see "
                             f"{hint.format(args.name)}") from None
        raise UsageError(str(e)) from None
    spec = specs[name]
    kwargs = _dataset_arguments(args, name, spec, specs)
    return name, spec, kwargs, Path(args.out)
