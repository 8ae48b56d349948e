"""Room 5 of the query wing: the batch engine, which searches, negates and answers.

:mod:`~uncertain_cep.query.engine.batch_engine` runs a chooser's search on partial matches
as columns (:mod:`~uncertain_cep.query.engine.batches`), in bounded batches, depth first;
batches with many entries per tuple go on as tuples
(:mod:`~uncertain_cep.query.engine.tuple_batches`,
:mod:`~uncertain_cep.query.engine.tuple_steps`); negation is bounded while searching
(:mod:`~uncertain_cep.query.engine.negation_bounds`) and applied exactly to complete tuples
(:mod:`~uncertain_cep.query.engine.completion`), partly on a spare thread
(:mod:`~uncertain_cep.query.engine.background`). The compiled code is in
:mod:`uncertain_cep.query.engine.kernels`.
"""
