"""Where an agent's ``run.sh`` runs, behind one interface (``base.Placement``): ``local``
(``local.py``: one detached tmux session per agent on the lane's private socket, through
``tmux.py``, the only module that talks to tmux) or ``slurm`` (``slurm.py``: one ``sbatch``
job per attempt). ``reaper`` ends agents (SIGTERM, then SIGKILL) through the interface;
``choose`` is the one factory (from a lane, or from a launch's record).

May import: ``definitions``, ``state``, ``names``, ``errors``, ``sanitize``. Never ``runtime``,
which drives it, nor ``cli``.
"""
