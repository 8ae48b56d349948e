"""Sample data: generators (the files under ``datasets/`` are made by these) and loaders
that turn the real UCI data sets into uncertain archives as Zhou et al. did (6.1).

* :func:`generate_office_rfid` -- the bundled sample archive (people, rooms, readers with
  clock skew and granularity);
* :func:`generate_synthetic` -- the paper's synthetic sequences;
* :func:`generate_connected_car` -- speed and acceleration per car per second (TPStream's
  aggressive-drivers example, part B);
* :func:`generate_piestream` / :func:`read_piestream` -- boolean situation streams in the
  layout of PieStream's benchmark input;
* :func:`load_dodgers`, :func:`load_localization`, :func:`load_icu` -- the UCI files.
"""

from uncertain_cep.datasets.connected_car import generate_connected_car
from uncertain_cep.datasets.office_rfid import generate_office_rfid
from uncertain_cep.datasets.piestream import generate_piestream, piestream_query, read_piestream
from uncertain_cep.datasets.synthetic import disjoint_sequence, generate_synthetic
from uncertain_cep.datasets.uci import load_dodgers, load_icu, load_localization

__all__ = ["disjoint_sequence", "generate_connected_car", "generate_office_rfid",
           "generate_piestream", "generate_synthetic", "load_dodgers", "load_icu",
           "load_localization", "piestream_query", "read_piestream"]
