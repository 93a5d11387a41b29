"""One git worktree per agent (``isolation: worktree``): agent branches from a base commit, an
integration branch that merges them, and the clean-up of what is left. Every git call is in
``git``; ``isolation`` knows the branch and folder names and what to do with them.

May import: ``state``, ``names``, ``errors``. Not ``runtime`` or ``cli``.
"""
