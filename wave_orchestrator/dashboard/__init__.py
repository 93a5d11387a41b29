"""The dashboard: renders the ``dashboard.json`` the launcher keeps current,
as a plain frame (``render``) or as an interactive console (``console_app``, Textual). It reads
state files only, so it runs in any terminal, any number of times; what its keys do to the
fleet goes through the ``Fleet`` the cli hands it (the cli's own commands).

May import: ``state``, ``names``, ``sanitize``, ``errors``. Not ``runtime`` or ``cli``.
"""
