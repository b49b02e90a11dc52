"""Warm and cold time to ready (METHODOLOGY: reported apart): which starts are cold, the page cache
really dropped before them, their own label in tables and figures, and a cold Docker start slower
than a warm one of the same image."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import need
from edgebench.errors import ConfigError
from edgebench.experiments import time_to_ready as ttr
from edgebench.results import load_results


def test_only_the_fair_protocol_starts_cold():
    assert ttr.start_kinds(["fair", "published"], ["warm", "cold"]) == [
        ("fair", "warm"), ("fair", "cold"), ("published", "warm")]
    assert ttr.start_kinds(["published"], ["cold"]) == [("published", "warm")]
    with pytest.raises(ConfigError, match="caches='tepid'"):
        ttr.check_caches("tepid")


def test_the_plan_counts_cold_starts_and_their_cost():
    base = dict(profile="quick", apps="go-http", protocols="fair", repetitions=3)
    warm = ttr.plan_time_to_ready(base, ["docker"])
    both = ttr.plan_time_to_ready({**base, "caches": "warm,cold"}, ["docker"])
    from edgebench.plan import RUNTIME_COST_S
    assert (warm.points, both.points) == (3, 6)
    # Three more starts, each with a drop and cold reads.
    assert both.seconds - warm.seconds == pytest.approx(3 * (RUNTIME_COST_S["docker"][1] + ttr.COLD_EXTRA_S))


def test_dropping_the_page_cache_empties_it(local):
    """The drop the cold starts rely on: a file just read is cached, and after the drop it is not
    (Cached in /proc/meminfo falls by at least the file's size)."""
    import os
    import tempfile

    def cached_kib() -> int:
        line = next(x for x in open("/proc/meminfo") if x.startswith("Cached:"))
        return int(line.split()[1])

    with tempfile.NamedTemporaryFile(dir=os.path.expanduser("~"), delete=True) as f:
        f.write(os.urandom(64 << 20))
        f.flush()
        os.fsync(f.fileno())
        open(f.name, "rb").read()
        before = cached_kib()
        why = ttr.drop_page_cache(local)
        need("root (drop_caches)", why)
        assert before - cached_kib() >= 60 << 10


def test_cold_rows_get_their_own_label_and_finding():
    from edgebench.plotting.time_to_ready import ttr_findings, ttr_table
    from edgebench.reference import load_reference
    rows = [dict(app="go-http", runtime="docker", protocol="fair", cache=cache, rep=rep, metric="time_to_ready",
                 value=value + rep, status="ok", accelerator=None)
            for cache, value in (("warm", 300.0), ("cold", 900.0)) for rep in (1, 2, 3)]
    table = ttr_table(pd.DataFrame(rows), load_reference("time_to_ready"))
    assert list(table["runtime"]) == ["docker", "docker (cold)"]
    assert list(table["median_ms"]) == [302.0, 902.0]
    assert "cold start (page cache dropped) 902.0 ms against 302.0 ms warm (3.0x)" in ttr_findings(table)


@pytest.mark.integration
def test_a_cold_docker_start_is_slower_than_a_warm_one(local, docker_ready, cgroups_ready, no_leftovers):
    need("root (drop_caches)", ttr.drop_page_cache(local))
    run_dir = ttr.run_time_to_ready(runtimes="docker", apps="go-http", protocols="fair", caches="warm,cold",
                                    repetitions=3, profile="quick", progress=False)
    df = load_results(run_dir)
    ready = df[df["metric"] == "time_to_ready"]
    assert (ready["status"] == "ok").all(), ready["error"].tolist()
    median = ready.groupby("cache")["value"].median()
    assert set(ready["cache"]) == {"warm", "cold"} and len(ready) == 6
    # dockerd's shim, runc and the image's layer come back from the storage: slower, on every run.
    assert median["cold"] > median["warm"], median.to_dict()
