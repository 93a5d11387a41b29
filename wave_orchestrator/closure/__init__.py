"""The judge of a wave: the markers closure agents print (``[wave-gate]``, ``[wave-verdict]``...)
and the gates that turn them, with status files and reports, into pass or fail.

May import: ``definitions``, ``state``, ``names``, ``errors``, ``sanitize``. Never ``agents``
(a sibling) or anything above: a gate judges results, it does not run agents.
"""
