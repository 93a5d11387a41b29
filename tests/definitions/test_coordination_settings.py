"""Lane settings for questions to a person: notify.command and feedback.timeout_minutes."""

from __future__ import annotations

import pytest
from helpers import Repo

from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.errors import LaneInvalid

WAVE = """\
wave: 1
agents:
  - id: A1
    prompt: p
    executor: {local: {command: ["true"]}}
"""


def test_notify_and_feedback_are_read(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local}\nclosure: {required_roles: []}\n"
        "notify: {command: [notify-send, wave]}\nfeedback: {timeout_minutes: 5}\n",
        {1: WAVE},
    )
    lane = load_lane(repo.root, "main")
    assert lane.notify_command == ("notify-send", "wave")
    assert lane.feedback_timeout_minutes == 5


def test_defaults_without_the_keys(repo: Repo) -> None:
    repo.lane("main", "defaults: {executor: local}\nclosure: {required_roles: []}\n", {1: WAVE})
    lane = load_lane(repo.root, "main")
    assert (lane.notify_command, lane.feedback_timeout_minutes) == ((), 60)


def test_bad_values_name_file_line_and_field(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local}\nclosure: {required_roles: []}\n"
        "notify: {command: []}\nfeedback: {timeout_minutes: 1e9, wait: 3}\n",
        {1: WAVE},
    )
    try:
        load_lane(repo.root, "main")
    except LaneInvalid as exc:
        text = str(exc)
    else:
        raise AssertionError("an empty notify command and a huge timeout must be refused")
    assert "lanes/main/lane.yaml:3" in text and "notify.command" in text
    assert "lanes/main/lane.yaml:4" in text and "feedback.timeout_minutes" in text
    assert "feedback.wait" in text


def test_the_sinks_and_a_bare_on_key_are_read(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local}\nclosure: {required_roles: []}\n"
        "notify:\n  desktop: true\n  bell: true\n"
        "  webhook: {url: 'https://ntfy.sh/my-topic', format: ntfy}\n"
        "  on: [question, lane-done]\n",  # `on:` is YAML 1.1's true: read as the word
        {1: WAVE},
    )
    notify = load_lane(repo.root, "main").notify
    assert (notify.desktop, notify.bell) == (True, True)
    assert (notify.webhook_url, notify.webhook_format) == ("https://ntfy.sh/my-topic", "ntfy")
    assert notify.on == ("question", "lane-done") and notify.command == ()


def test_a_bad_sink_is_named(repo: Repo) -> None:
    repo.lane(
        "main",
        "defaults: {executor: local}\nclosure: {required_roles: []}\n"
        "notify:\n  webhook: {url: 'file:///etc/passwd', format: teams}\n"
        "  on: [wave-exploded]\n  bell: loud\n",
        {1: WAVE},
    )
    with pytest.raises(LaneInvalid) as refused:  # a file URL, an unknown format and event
        load_lane(repo.root, "main")
    text = str(refused.value)
    assert "notify.webhook.url: not an http(s) URL: 'file:///etc/passwd'" in text
    assert "notify.webhook.format: unknown format 'teams'" in text
    assert "notify.on[0]: unknown event 'wave-exploded'" in text
    assert "notify.bell: wrong type" in text
