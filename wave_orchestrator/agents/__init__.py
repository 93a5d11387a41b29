"""What one agent is given and what it prints: the executor's argv, the prompt and closure
briefing, the ``run.sh`` wrapper that retries rate limits, the usage figures parsed from its
output, and the scripted demo agent.

May import: ``definitions``, ``state``, ``names``, ``errors``. Never ``closure`` (a sibling) or
anything above.
"""
