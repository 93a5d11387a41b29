"""Lane files as read: YAML parsed with the line and column of every value (bounded in size,
nesting and aliases, refusing FIFOs and devices), and the Checker that reports a field's
problem at that position in the ``file:line:col: field: message`` form.

At the bottom with ``model``, and independent of it: both are used by everything else in
``definitions``, and neither needs the other.

May import: ``state`` (file kinds), ``errors``. Not ``definitions.model``.
"""
