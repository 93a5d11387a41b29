"""One attempt of one agent: its plan (prompt, argv, environment, wrapper script) and its run
(state, clocks, result).

May import: every room below the runtime; nothing else of the runtime.
"""
