"""Where an agent's ``run.sh`` runs. ``tmux`` is the local placement: one detached session per
agent on the lane's private socket, and the only module that talks to tmux. ``reaper`` stops
sessions (SIGTERM, then SIGKILL) through it. A cluster placement (Slurm) lands beside it behind
the same calls.

May import: ``state``, ``names``, ``errors``. Never the rest of ``runtime``.
"""
