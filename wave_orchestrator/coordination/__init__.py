"""Agents that talk: the coordination log, its projections (board, shared summary, inboxes) and
questions to a person (human feedback), used by the launcher and by ``wave coord``,
``wave feedback`` and ``wave comment``.

May import: ``state``, ``names``, ``errors``, ``sanitize``. Not ``runtime`` or ``cli``.
"""
