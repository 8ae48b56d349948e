"""Room 3 of the query wing: what every evaluation path shares.

The query bound to an index (:mod:`~uncertain_cep.query.evaluation.context`: symbols'
probabilities, R*-tree searches, item windows, the exact pruning bound), chain
probabilities over OI-trees (:mod:`~uncertain_cep.query.evaluation.chains`, Zhou et al.
4), the answer rows (:mod:`~uncertain_cep.query.evaluation.answer`), the counters and
EXPLAIN (:mod:`~uncertain_cep.query.evaluation.stats`,
:mod:`~uncertain_cep.query.evaluation.explain`) and Ctrl-C
(:mod:`~uncertain_cep.query.evaluation.interrupts`).
"""
