"""Agents in a bubblewrap sandbox: each agent writes its own work and nothing else.

- ``bwrap``: the exact ``bwrap`` command line for one agent, from a ``SandboxPlan`` of paths
  already decided; each option carries the reason it is there (the dry run shows them). Pure.
- ``plan``: the plan for one agent's attempt, gathered at launch from its lane, wave, worktree,
  executor and environment (which paths exist, where programs live), and ``prepare``, which
  makes the files the plan binds before the sandbox starts.
- ``home``: what of the person's HOME an executor needs (its login, settings, caches) and the
  folders the programs an agent runs live in.
- ``probe``: whether bubblewrap works on this machine, and when not, the one command or
  setting that fixes it.

May import: ``definitions`` (the sandbox settings), ``state`` (the state dir's layout, safe
file opening, the ledger's home), ``names``, ``errors``, ``sanitize``. Never ``runtime`` or
``agents``, which use it, nor ``cli``.
"""
