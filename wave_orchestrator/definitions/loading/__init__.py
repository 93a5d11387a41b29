"""The loaders: ``load_lane`` reads lane.yaml and every wave file into a LaneDef, or raises
LaneInvalid with every problem found. A lane is loaded through its waves, a wave through its
agents, then the rules across them; each key is checked by its ``sections`` module.

Here, at the top of ``definitions``, because only a loader needs all the rest: the sections
for each key, the repository for where paths lead and whether a state dir is usable.

May import: ``definitions.sections``, ``definitions.repository``, ``definitions.source``,
``definitions.model``; ``state``, ``names``, ``errors``.
"""
