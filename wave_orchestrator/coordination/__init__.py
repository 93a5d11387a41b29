"""Agents that talk: the coordination log, its projections (board, shared summary, inboxes) and
questions to a person (human feedback), used by ``wave coord``, ``wave feedback`` and
``wave comment``, and by the launcher through ``follower`` (its side of coordination: the log
followed while a wave runs, retries held on questions, the gates' items on the board).

May import: ``closure``, ``agents``, ``definitions``, ``state``, ``names``, ``errors``,
``sanitize``. Not ``runtime``, ``cli`` or ``notify`` (a person is told through a callable the
launcher passes in).
"""
