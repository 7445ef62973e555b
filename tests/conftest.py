# --- hypothesis profiles (tests/test_session_properties.py and any other property tests) ---
# "ci" is the default and what CI runs; HYPOTHESIS_PROFILE=deep runs 10,000 examples.
# derandomize + no deadline keep CI stable; no example database, so runs leave no state behind.
import os as _os

from hypothesis import HealthCheck as _HealthCheck
from hypothesis import Phase as _Phase
from hypothesis import settings as _settings

_settings.register_profile(
    "ci",
    max_examples=300,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[_HealthCheck.too_slow, _HealthCheck.data_too_large],
)
_settings.register_profile(
    "deep",
    max_examples=10_000,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[_HealthCheck.too_slow, _HealthCheck.data_too_large],
)
# "dev": the ci examples without shrinking, for a quick first look at a failure.
_settings.register_profile(
    "dev",
    parent=_settings.get_profile("ci"),
    phases=[_Phase.explicit, _Phase.reuse, _Phase.generate],
)
_settings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- CI: a skipped browser or real-data test is a failure (lead) ---
# Under CI=true, a test marked `browser` or `realdata` that skips (no Chromium,
# no ../shared/data/real, ...) is reported as failed: a run that skipped them
# proved nothing.
import pytest as _pytest

_MUST_RUN_IN_CI = ("browser", "realdata")


@_pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (
        _os.environ.get("CI", "").lower() in ("1", "true", "yes")
        and report.skipped
        and any(item.get_closest_marker(m) for m in _MUST_RUN_IN_CI)
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"CI=true: a {'/'.join(m for m in _MUST_RUN_IN_CI if item.get_closest_marker(m))} test must run, but it skipped: {reason}"
