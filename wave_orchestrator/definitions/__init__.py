"""Lane and wave files in, frozen definitions out: YAML with line numbers, the schema checker,
the loaders that report every problem as ``file:line:col: field: message``, executor settings and
their merge, the repository's lanes, and ``wave init``'s scaffold.

May import: ``state`` (where a lane's state dir is), ``names``, ``errors``. Nothing here runs
anything; everything above reads only ``model``'s dataclasses.
"""
