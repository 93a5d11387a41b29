"""One key of a lane or wave file each, checked into a value of the model: defaults,
executors and the settings they accept, profiles and accounts, governance (caps, spend, usage
limits, webhooks), notify and feedback, isolation and merge, placement, components, eval
targets, and the index of owned paths.

A section knows nothing of the file around it: it is handed a Checker and the raw value, and
reports its problems there, so a new key is one module here and one call in a loader.

May import: ``definitions.repository`` (paths inside the repository), ``definitions.source``,
``definitions.model``; ``names``, ``errors``, ``sanitize``.
"""
