"""The live dashboard (SPEC 8): renders the ``dashboard.json`` the launcher keeps current. It only
reads that file, so it runs in any terminal, any number of times.

May import: ``state``, ``errors``. Not ``runtime`` or ``cli``.
"""
