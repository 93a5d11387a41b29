"""wave: launch fleets of AI coding agents in waves, each in its own detached tmux session.

The package is layered; each folder imports only from the folders below it (import-linter checks
this in CI, see ``[tool.importlinter]`` in pyproject.toml and docs/architecture.md)::

    cli/                          arguments, output, exit codes
    runtime/ (+ placement/)       plan and run waves; tmux
    metrics/ | desk/ | dashboard/ features the runtime feeds and the CLI reads
    closure/ | agents/            judging results | what one agent is given and prints
    definitions/                  lane and wave files -> frozen definitions
    state/                        the state directory and its files
    names, errors                 shared by all
"""

__version__ = "0.1.0"
