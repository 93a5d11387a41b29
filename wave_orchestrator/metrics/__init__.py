"""Run metrics: ``records`` builds the line the launcher appends per finished attempt;
``report`` reads them back for ``wave metrics``.

May import: ``agents`` (usage figures), ``state``, ``errors``. Not ``runtime`` or ``cli``.
"""
