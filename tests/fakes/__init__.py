"""Stand-ins for what the agent pool drives (a placement, a clock, a file watcher), so that its
decisions are tested, and its cost measured at scale, in one process and in simulated time."""
