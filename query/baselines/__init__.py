"""Room 6 of the query wing: the baselines, outside the engine.

The possible-worlds oracle (:mod:`~uncertain_cep.query.baselines.possible_worlds`, the
definition enumerated), the paper's tree traversal
(:mod:`~uncertain_cep.query.baselines.tree_traversal`) and the entry-by-entry engines the
batch engine replaced (:mod:`~uncertain_cep.query.baselines.entry_selectivity`,
:mod:`~uncertain_cep.query.baselines.entry_sequential`). Each is a strategy
(``strategy=...``), held to the oracle by the tests, and a reference for the benchmarks'
ratios.
"""
