"""Docker with crun beside runc (paper 001 counts runc's start-up among Docker's costs): a variant
that joins when named, registered with the daemon by provisioning, and verified per start from
the container's own record (HostConfig.Runtime)."""

from __future__ import annotations

import json

import pytest

from conftest import need
from edgebench.errors import ConfigError
from edgebench.experiments import time_to_ready as ttr
from edgebench.results import load_results
from edgebench.runtimes import requested_runtimes


def test_auto_leaves_the_variant_out_until_it_is_named():
    auto, named = requested_runtimes("auto")
    assert "docker" in auto and "docker-crun" not in auto and not named
    both, named = requested_runtimes("auto,docker-crun")
    assert both.index("docker-crun") == both.index("docker") + 1 and named == {"docker-crun"}
    assert requested_runtimes("docker-crun,native") == (["docker-crun", "native"], {"docker-crun", "native"})
    with pytest.raises(ConfigError, match="unknown runtime 'podman'"):
        requested_runtimes("auto,podman")


@pytest.fixture(scope="session")
def crun_ready(local, docker_ready):
    from edgebench.runtimes.docker import DockerCrunRuntime
    why = DockerCrunRuntime(local).availability()
    need("docker-crun", None if why else why.reason)
    return True


def test_time_to_ready_with_crun_beside_runc(local, crun_ready, cgroups_ready, no_leftovers):
    run_dir = ttr.run(ttr.Params(runtimes="docker,docker-crun", apps="go-http", protocols="fair", caches="warm",
                                 repetitions=2, profile="quick", cpus="1", memory="128m", progress=False))
    df = load_results(run_dir)
    ready = df[df["metric"] == "time_to_ready"]
    assert (ready["status"] == "ok").all() and ready.groupby("runtime").size().to_dict() == {
        "docker": 2, "docker-crun": 2}, ready[["runtime", "status", "error"]]
    # Each start ran on the OCI runtime it was meant to, as the container itself records.
    used = {}
    for raw in (run_dir / "raw").glob("*probe-go-http-*"):
        record = json.loads(raw.read_text())
        runtime = "docker-crun" if "docker-crun" in raw.name else "docker"
        used.setdefault(runtime, set()).add(record["instance_details"]["oci_runtime"])
    assert used == {"docker": {"runc"}, "docker-crun": {"crun"}}
    meta = json.loads((run_dir / "meta.json").read_text())
    assert "crun" in json.dumps(meta.get("runtimes", meta))
