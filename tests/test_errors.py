"""convlab.errors: every error and warning convlab raises, each saying what is wrong."""

from __future__ import annotations

import pytest

import convlab
from convlab import errors


def test_every_error_is_public_and_in_one_module():
    for name in errors.__all__:
        assert getattr(convlab, name) is getattr(errors, name)
        assert name in convlab.__all__


def test_refused_carries_status_and_the_running_turn():
    err = convlab.Refused(409, "turn t1 is running", turn_id="t1")
    assert (err.status, err.turn_id, str(err)) == (409, "t1", "turn t1 is running")
    assert repr(err) == "Refused(409, 'turn t1 is running')"


def test_config_error_names_the_key_first():
    err = convlab.ConfigError("agent.bot.context.window", "must be an integer")
    assert err.key == "agent.bot.context.window" and str(err) == "agent.bot.context.window: must be an integer"


def test_provider_error_kinds_are_checked():
    assert convlab.ProviderError("too_long").kind == "too_long" and str(convlab.ProviderError("failed", "boom")) == "boom"
    with pytest.raises(ValueError, match="kind must be one of"):
        convlab.ProviderError("slow")


def test_log_error_has_the_line():
    assert convlab.LogError("bad", line=3).line == 3 and convlab.LogError("bad").line is None
    assert issubclass(convlab.LogWarning, UserWarning) and issubclass(convlab.ReadWarning, UserWarning)
