"""Bad parameters fail before anything starts: no run directory, no container, no process. Most
are refused when the record is made; the rest when `run` connects and chooses its runtimes (an
unknown runtime or a runtime's option, an unreachable target, a limit below a runtime's minimum)."""

import pytest

from edgebench.errors import ConfigError, TargetUnreachable
from edgebench.experiments import common, static_footprint, time_to_ready
from edgebench.paths import DATA_DIR

# Valid except for what each case overrides; native only, so no other runtime is probed.
TTR_OK = dict(runtimes="native", apps="go-http", profile="quick", repetitions=1, protocols="fair",
              caches="warm", cpus="1", memory="64m", progress=False)
FOOTPRINT_OK = dict(runtimes="native", apps="go-http", profile="quick")

COMMON = [
    (dict(runtimes="podman"), ConfigError, ["'podman'"]),
    (dict(runtimes="nanos", nanos_accel="warp"), ConfigError, ["'warp'", "auto, kvm, tcg"]),
    (dict(apps="rust-http"), ConfigError, ["'rust-http'"]),
    (dict(profile="huge"), ConfigError, ["'huge'"]),
    (dict(target="root@127.0.0.1:1"), TargetUnreachable, ["root@127.0.0.1:1"]),
]
TTR_ONLY = [
    (dict(memory="64"), ConfigError, ["'64'", "'64m'"]),
    (dict(memory="64x"), ConfigError, ["'64x'"]),
    (dict(cpus="many"), ConfigError, ["'many'"]),
    (dict(repetitions="three"), ConfigError, ["repetitions='three'"]),  # 0 means the profile default
    (dict(repetitions=-2), ConfigError, ["repetitions=-2"]),
    (dict(protocols="bogus"), ConfigError, ["'bogus'"]),
    (dict(memory="2m"), ConfigError, ["2 MiB", "native", "minimum 4"]),  # below native's minimum
]
FOOTPRINT_ONLY = [
    (dict(docker_builds="bogus"), ConfigError, ["'bogus'"]),
]


class StartedTooEarly(AssertionError):
    pass


def tripwire(*args, **kwargs):
    raise StartedTooEarly("validation let this through: a Run was created (run dir, builds, starts)")


def run_dirs(experiment):
    base = DATA_DIR / experiment
    return sorted(p.name for p in base.iterdir()) if base.is_dir() else []


def check_refused(module, ok, bad, error, words, monkeypatch):
    """Making the record or running it raises `error` naming `words`, and no run directory is made."""
    monkeypatch.setattr(common, "open_run", tripwire)  # a missed check fails here instead of running
    before = run_dirs(module.EXPERIMENT)
    with pytest.raises(error) as e:
        module.run(module.Params(**{**ok, **bad}))
    for word in words:
        assert word in str(e.value)
    assert run_dirs(module.EXPERIMENT) == before


def case_id(case):
    return ",".join(f"{k}={v}" for k, v in case[0].items())


@pytest.mark.parametrize("bad, error, words", COMMON + TTR_ONLY, ids=map(case_id, COMMON + TTR_ONLY))
def test_time_to_ready_refuses(bad, error, words, monkeypatch, no_leftovers):
    check_refused(time_to_ready, TTR_OK, bad, error, words, monkeypatch)


@pytest.mark.parametrize("bad, error, words", COMMON + FOOTPRINT_ONLY,
                         ids=map(case_id, COMMON + FOOTPRINT_ONLY))
def test_footprint_refuses(bad, error, words, monkeypatch, no_leftovers):
    check_refused(static_footprint, FOOTPRINT_OK, bad, error, words, monkeypatch)


def test_the_valid_base_parameters_pass_validation(monkeypatch):
    """So each case above fails for its own bad value, not for a flaw in the base parameters."""
    for module, ok in [(time_to_ready, TTR_OK), (static_footprint, FOOTPRINT_OK)]:
        monkeypatch.setattr(common, "open_run", tripwire)
        with pytest.raises(StartedTooEarly):
            module.run(module.Params(**ok))
