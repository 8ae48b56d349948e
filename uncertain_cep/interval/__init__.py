"""Temporal patterns over interval events (SEMANTICS B): situations and matchers.

Point events become situations per symbol (:mod:`~uncertain_cep.interval.situations`,
TPStream 4.3); the reference matcher (:mod:`~uncertain_cep.interval.brute_force`) finds
every combination of situations that satisfies a
:class:`~uncertain_cep.interval.patterns.TemporalPattern`; the join engine
(:mod:`~uncertain_cep.interval.join`, TPStream 5.2 and 5.4) finds the same by range joins
on sorted endpoints, the automata engine (:mod:`~uncertain_cep.interval.automata_join`,
Chen et al. 3.2-3.3) by one automaton per related pair and natural joins;
:func:`~uncertain_cep.interval.api.match` runs any of them on a table.
"""

from uncertain_cep.interval.automata_join import match_automata
from uncertain_cep.interval.brute_force import match_brute_force
from uncertain_cep.interval.join import match_join
from uncertain_cep.interval.situations import derive_situations, situations_from_intervals

__all__ = ["derive_situations", "match_automata", "match_brute_force", "match_join",
           "situations_from_intervals"]
