"""The fleet governor: usage limits waited out until their reset, the accounts a
limit is counted against, concurrency caps per executor, account and model, and the spend
limit. Asked by the agent pool before every launch; told of every limit and cost.

May import: ``definitions``, ``state``, ``names``, ``errors``, ``sanitize``. Not ``runtime``
or ``cli``.
"""
