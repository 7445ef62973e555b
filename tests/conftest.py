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
_settings.register_profile("deep", parent=_settings.get_profile("ci"), max_examples=10_000)
# "dev": the ci examples without shrinking, for a quick first look at a failure.
_settings.register_profile(
    "dev",
    parent=_settings.get_profile("ci"),
    phases=[_Phase.explicit, _Phase.reuse, _Phase.generate],
)
_settings.load_profile(_os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# a sweep keeps its rows on disk by default (convlab.tuning.results); the tests replay what they sweep, each time,
# unless a test gives result_cache= a folder of its own
_os.environ.setdefault("CONVLAB_RESULT_CACHE", "off")


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


# --- every Session scenario, again through its log, eager and lazy (lead) ---
# Issue 8: "Every observable result equals eager loading (the Session test
# suite runs in both modes)". Each Session a test_session_* test makes without
# a log gets one; when the test ends, the log is loaded eagerly and lazily and
# every observable result is compared with the live session.
import copy as _copy

_BOTH_MODES_SKIP = ("test_session_properties", "test_session_log")


@_pytest.fixture(autouse=True)
def _both_modes(request, tmp_path_factory, monkeypatch):
    module = request.module.__name__.rsplit(".", 1)[-1]
    if not module.startswith("test_session_") or module in _BOTH_MODES_SKIP:
        yield
        return
    from convlab import engine

    made = []
    original = engine.Session.__init__
    folder = tmp_path_factory.mktemp("both-modes")

    def init(self, *args, **kwargs):
        if kwargs.get("log") is None and len(args) < 5:
            kwargs["log"] = folder / f"s{len(made)}.jsonl"
            made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(engine.Session, "__init__", init)
    yield
    monkeypatch.undo()
    from session_support import check_wire

    for live in made:
        if not hasattr(live, "_log") or live._log is None:
            continue
        check_wire(live)
        path = live._log.path
        eager = engine.Session.load(path, append=False)
        lazy = engine.Session.load(path, lazy=True, append=False)
        snap = live.snapshot()
        assert eager.snapshot() == snap, f"{request.node.nodeid}: eager load differs from the live session"
        assert lazy.snapshot() == snap, f"{request.node.nodeid}: lazy load differs from the live session"
        assert list(lazy.events) == list(eager.events) == [_copy.deepcopy(e) for e in live.events]
        assert lazy.path() == eager.path() == live.path()
        assert lazy.tokens() == eager.tokens() == live.tokens()
        assert lazy.state == eager.state == live.state
        assert lazy.turns == live.turns and lazy.head == live.head
        assert (lazy.pending is None) == (live.pending is None)
        if live.pending is not None:
            assert lazy.pending == live.pending
