"""The file desk: SQLite claims, queues and handovers for agents that edit the same
files, used by the launcher and by ``wave desk``.

May import: ``state``, ``errors``. Not ``runtime`` or ``cli``.
"""
