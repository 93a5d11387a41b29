"""Lane and wave files in, frozen definitions out.

Four folders and one module, each importing only those below it (the ``definitions``
contract in pyproject.toml):

- ``loading/``: the lane and wave loaders, which report every problem as
  ``file:line:col: field: message`` and build the definitions only from a valid lane;
- ``sections/``: one key of a lane or wave file each (defaults, executors, governance, notify,
  isolation, placement, components, eval targets, owned paths), checked into a model value;
- ``repository/``: finding the repository and its lanes, paths inside it, ``wave init``'s
  scaffold and the bundled demo lane;
- ``source/`` (YAML that remembers line and column, and the checker that reports a field's
  problem at its position) beside ``model`` (the frozen dataclasses of a lane, a wave and an
  agent, which everything above ``definitions`` reads). ``model`` stays one module: it is one
  concern, stdlib only, and the rest of the package imports it by that name.

May import: ``state`` (where a lane's state dir is, safe file opening), ``names``, ``errors``,
``sanitize``. Nothing here runs anything.
"""
