"""The repository lanes live in: finding it (``--repo``, ``WAVE_REPO``, the nearest ``lanes/``),
its lanes and the header of each, paths inside it (normalised, and where links really lead),
``wave init``'s scaffold and the bundled demo lane it copies (package data).

Below the loaders, which check paths against it, and above ``source``: the read-only commands
read a lane's header and ``lanes/wave.yaml`` with the same bounded YAML reader, without
loading the lane.

May import: ``definitions.source``, ``definitions.model``; ``state``, ``names``, ``errors``.
"""
