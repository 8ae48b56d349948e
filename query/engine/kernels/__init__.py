"""Room 2 of the query wing: the compiled kernels (numba), below everything they serve.

Chains of OI-tree nodes (:mod:`~uncertain_cep.query.engine.kernels.chains`), grouping and
hash tables (:mod:`~uncertain_cep.query.engine.kernels.grouping`), negation's weighted sums
(:mod:`~uncertain_cep.query.engine.kernels.negation`,
:mod:`~uncertain_cep.query.engine.kernels.negation_folds`) and complete tuples'
probabilities (:mod:`~uncertain_cep.query.engine.kernels.tuples`); the instants they compute
on (:mod:`~uncertain_cep.query.engine.kernels.instants`) and the lock around numba's
threading layer (:mod:`~uncertain_cep.query.engine.kernels.core`). Every kernel is compiled
with ``cache=True`` (scripts/warm_kernels.py fills the cache once).
"""
