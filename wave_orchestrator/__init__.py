"""wave: launch fleets of AI coding agents in waves, each in its own detached tmux session."""

__version__ = "0.1.0"
