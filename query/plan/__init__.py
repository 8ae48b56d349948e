"""Room 4 of the query wing: planning, the strategies' one decision.

:mod:`~uncertain_cep.query.plan.estimates` turns the index's statistics into expected
candidates per item and window (Zhou et al. 5.2); :mod:`~uncertain_cep.query.plan.choosers`
picks the item each partial tuple matches next (rarest first, or pattern order), asked by
the engine with a record and never seeing it.
"""
