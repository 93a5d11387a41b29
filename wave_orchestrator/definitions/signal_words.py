"""The states the infra and deploy signals take: what the infra gate lets through and what a
deploy may say. One list, read by the marker grammar, the infra gate and the prompts that
teach agents those markers, so an agent is never taught a word the gate does not know."""

from __future__ import annotations

# States of an infra check that let the wave go on: in order, or waiting on a known next step.
INFRA_PASSING = (
    "conformant",
    "setup-required",
    "setup-in-progress",
    "action-required",
    "action-approved",
    "action-complete",
)
DEPLOY_STATES = ("deploying", "healthy", "failed", "rolledover")
