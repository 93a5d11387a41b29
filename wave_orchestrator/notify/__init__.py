"""Where a person is told of what needs them (docs/coordination.md, "Notifications"): one JSON
document per event (a question, a wave that ended, a usage limit, the spend limit, the lane
done), sent to the lane's sinks: a command, the desktop, a webhook (JSON, Slack, ntfy), the
terminal's bell. Off the launcher's loop, on one worker thread, coalesced, bounded.

May import: ``definitions``, ``state``, ``names``, ``errors``, ``sanitize``. Not ``runtime``
or ``cli``.
"""
