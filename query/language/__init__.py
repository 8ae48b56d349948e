"""Room 1 of the query wing: query text to a bound pattern (SEMANTICS C, part A).

:mod:`~uncertain_cep.query.language.parse` parses the text (lark) into a
:class:`~uncertain_cep.query.language.patterns.SequencePattern` and binds its window to an
index's time axis; :mod:`~uncertain_cep.query.language.symbols` checks and weighs each
symbol's conditions against an archive.
"""
