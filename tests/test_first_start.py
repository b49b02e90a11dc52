"""First starts (paper 001's cold start with the image not on the device): the plan counts them for
runtimes with images only; for real, Docker removes the image, pulls it from a registry on this
machine or on a second host (a network namespace) over TLS, starts it, and the pull's transfer and
unpacking are timed alone; LXD fetches its base image's tarballs from the registry and imports them;
afterwards no registry, trust entry or registry tag is left, and LXD's base image is back."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from conftest import need_tool
from edgebench.errors import ConfigError
from edgebench.experiments import time_to_ready as ttr


def test_first_is_a_cache_kind_and_the_plan_counts_it_for_runtimes_with_images():
    assert ttr.check_caches("warm,first") == ["warm", "first"]
    with pytest.raises(ConfigError, match="warm, cold, first"):
        ttr.check_caches("lukewarm")
    base = dict(apps="go-http", protocols="fair", repetitions=2, profile="quick")
    warm = ttr.plan(ttr.Params(**base, caches="warm"), ["native", "docker"])
    first = ttr.plan(ttr.Params(**base, caches="warm,first"), ["native", "docker"])
    assert warm.points == 4 and first.points == 6  # native: 2 warm; docker: 2 warm + 2 first
    # LXD fetches its base image; a VM's disk is built on the device: nothing to fetch.
    assert ttr.plan(ttr.Params(**base, caches="warm,first"), ["lxd", "linux-vm"]).points == 4 + 2
    assert first.seconds > warm.seconds + 2 * ttr.FIRST_EXTRA_S


def test_the_first_start_table_splits_the_pull_from_the_start():
    from edgebench.plotting.time_to_ready import first_start_figure, first_start_findings, first_start_table
    rows = [dict(app="go-http", runtime="docker", protocol="fair", cache="first", rep=1, metric=m, value=v,
                 status="ok") for m, v in (("image_pull", 300.0), ("time_to_ready", 400.0), ("first_start", 700.0),
                                             ("image_transfer", 50.0), ("image_unpack", 120.0),
                                             ("image_compressed", 3.5), ("layers_fetched", 1))]
    rows.append(dict(app="go-http", runtime="docker", protocol="fair", cache="warm", rep=1, metric="time_to_ready",
                     value=350.0, status="ok"))
    df = pd.DataFrame(rows)
    table = first_start_table(df)
    r = table.iloc[0]
    assert (r.first_start_ms, r.pull_ms, r.start_ms, r.warm_ms) == (700.0, 300.0, 400.0, 350.0)
    assert "first start 700 ms = pull 300 ms" in first_start_findings(table) and "2.0x a warm start" in \
        first_start_findings(table)
    assert first_start_figure(df) is not None
    # Nothing pulled: the figure the notebook promises says why, instead of being left out.
    absent = first_start_figure(df[df["cache"] == "warm"])
    said = " ".join(t.get_text() for ax in absent.axes for t in ax.texts)
    assert "Not in this run" in said and 'caches = "warm,cold,first"' in said and "docker" in said


def _registry_ready(local):
    need_tool(local, "docker-registry")
    need_tool(local, "openssl")


def _check_first_starts(run_dir, registry_host_name: str) -> pd.DataFrame:
    from edgebench.results import load_results
    df = load_results(run_dir)
    first = df[(df["cache"] == "first") & (df["status"] == "ok")]
    assert set(first["runtime"]) == {"docker"}, df[df["status"] == "failed"][["runtime", "metric", "error"]]
    def by(metric):
        return first[first["metric"] == metric]["value"]

    # The image really was absent: every layer came over the network, none was already there.
    assert (by("layers_fetched") >= 1).all() and (by("layers_present") == 0).all()
    assert len(by("first_start")) == 2 and (by("image_transfer") > 0).all() and (by("image_unpack") > 0).all()
    assert (by("first_start") > by("image_pull").values).all()
    warm = df[(df["cache"] == "warm") & (df["runtime"] == "docker") & (df["metric"] == "time_to_ready")]["value"]
    assert by("first_start").median() > warm.median()  # the pull comes on top of a start
    _check_limits_of_first_starts(first)
    notes = json.loads((run_dir / "meta.json").read_text())["notes"]
    assert "native" in json.dumps(notes.get("no_first_starts", {}))
    assert notes["registry"]["host"] == registry_host_name
    assert any("pull-go-http-docker" in p.name for p in (run_dir / "raw").iterdir())
    return df


def _check_limits_of_first_starts(first: pd.DataFrame) -> None:
    """A first start ran under the limits read back from its app, as its time to ready did; the pull's
    rows were measured outside them and say so (found on pi-arm64-nomemcg, where first_start rows
    lacked the 'memory limit not applied' its start's rows had)."""
    def rows(metric):
        return first[first["metric"] == metric]

    for column in ("memory_mb_applied", "cpus_applied", "limits_note"):
        assert list(rows("first_start")[column]) == list(rows("time_to_ready")[column]), column
    assert rows("first_start")["memory_mb_applied"].notna().all()
    for metric in ("image_pull", "layers_fetched", "image_transfer", "page_cache_mb_at_launch"):
        assert rows(metric)["limits_note"].str.contains("outside the app's limits").all(), metric
        assert rows(metric)["memory_mb_applied"].isna().all(), metric
    assert not rows("time_to_ready")["limits_note"].str.contains("outside").any()


def _nothing_left(local, trusted_before: set[str]):
    """What another run on this machine holds (trusted_before, taken as the test began) is not this one's."""
    trusted = _trust_entries() - trusted_before
    assert not trusted, f"the run's registry is still trusted: {trusted}"
    assert local.run(["docker", "image", "inspect", "edgebench/go-http:offline"], check=False).ok, \
        "the build's tag must point at the pulled image again"


def test_docker_first_starts_pull_from_a_registry_on_this_machine(local, docker_ready, cgroups_ready,
                                                                   no_leftovers):
    _registry_ready(local)
    trusted_before = _trust_entries()
    run_dir = ttr.run(ttr.Params(runtimes="native,docker", apps="go-http", caches="warm,first", protocols="fair",
                                 repetitions=2, profile="quick", cpus="1", memory="256m", progress=False))
    _check_first_starts(run_dir, local.name)
    _nothing_left(local, trusted_before)


def test_dropping_the_image_leaves_another_runs_build_under_the_shared_tag(local, docker_ready, no_leftovers):
    """The build's tag (edgebench/go-http:offline) is one name on a daemon several runs use: a test
    session beside a quick run re-pointed it at its own build, and every later first start failed
    'still on local after docker image rm'. Removing this run's image must succeed and leave the
    other run's image; the pull then gives the tag back."""
    from edgebench.apps import APPS, place_app
    from edgebench.runtimes.docker import DockerRuntime
    from edgebench.runtimes.image_registry import serving
    _registry_ready(local)
    rt = DockerRuntime(local)
    go, node = (rt.package(place_app(local, APPS[name])) for name in ("go-http", "node-http"))
    try:
        with serving(local, local, rt.run_tag) as registry:
            published = rt.publish_image(go, registry)
            others = rt.inspect(node.ref, "{{.Id}}")
            local.run(["docker", "tag", node.ref, go.ref])  # another run's build now holds the tag
            rt.drop_image(published)
            assert rt.inspect(published.ref, "{{.Id}}") is None
            assert rt.inspect(others, "{{.Id}}") == others  # not this run's to remove
            pulled = rt.fetch_image(published)
            assert pulled["layers_fetched"] >= 1
            assert rt.inspect(go.ref, "{{.Id}}") == rt.inspect(published.ref, "{{.Id}}") != others
            local.run(["docker", "image", "rm", published.ref])
    finally:
        rt.cleanup()


def test_a_registry_host_without_the_registry_fails_before_anything_is_packaged(local, docker_ready):
    """On a fresh machine driving debian-v2 this came after minutes of packaging on the device."""
    from edgebench.errors import MissingTool
    from edgebench.paths import DATA_DIR
    from edgebench.targets import LocalTarget

    class WithoutRegistry(LocalTarget):  # this machine, as a load generator never provisioned
        def which(self, tool):
            return None if tool == "docker-registry" else super().which(tool)
    runs = DATA_DIR / "time_to_ready"
    before = set(runs.iterdir()) if runs.exists() else set()
    with pytest.raises(MissingTool, match="registry on local, which lacks docker-registry; `make provision`"):
        ttr.run(ttr.Params(runtimes="docker", apps="go-http", caches="warm,first", protocols="fair",
                           repetitions=1, profile="quick", registry=WithoutRegistry(), progress=False))
    assert (set(runs.iterdir()) if runs.exists() else set()) == before  # no run begun, nothing packaged


def test_lxd_first_starts_fetch_and_import_its_base_image(local, lxd_ready, cgroups_ready, no_leftovers):
    from edgebench.results import load_results
    from edgebench.runtimes.lxd_image import ensure_image, lxc_query
    _registry_ready(local)
    before = ensure_image(local)
    run_dir = ttr.run(ttr.Params(runtimes="lxd", apps="go-http", caches="warm,first", protocols="fair",
                                 repetitions=2, profile="quick", progress=False))
    df = load_results(run_dir)
    first = df[(df["cache"] == "first") & (df["status"] == "ok")]
    assert set(first["runtime"]) == {"lxd"}, df[df["status"] == "failed"][["runtime", "metric", "error"]]
    def by(metric):
        return first[first["metric"] == metric]["value"]

    # Both tarballs came over the network, the root filesystem's tens of MiB among them.
    assert (by("layers_fetched") == 2).all() and (by("image_compressed") > 50).all()
    assert (by("image_transfer") > 0).all() and (by("image_unpack") > 0).all()
    assert by("image_pull").values == pytest.approx(by("image_transfer").values + by("image_unpack").values, rel=0.05)
    warm = df[(df["cache"] == "warm") & (df["metric"] == "time_to_ready")]["value"]
    assert by("first_start").median() > warm.median()
    _check_limits_of_first_starts(first)
    # The base image is back under its alias, as it was: later LXD starts find it.
    alias = lxc_query(local, f"/1.0/images/aliases/{before.alias.replace('/', '%2F')}") or {}
    assert alias.get("target") == before.fingerprint
    trusted = os.listdir("/etc/docker/certs.d") if os.path.isdir("/etc/docker/certs.d") else []
    assert not trusted, f"the run's registry is still trusted: {trusted}"


def test_first_starts_pull_from_a_registry_on_the_load_generator_host(local, docker_ready, cgroups_ready, ssh_host,
                                                                      no_leftovers):
    """The registry in a network namespace with its own sshd: started over SSH, reached by the
    device's Docker at the namespace's address over the veth pair, its certificate trusted for
    that address only."""
    _registry_ready(local)
    from edgebench.targets import SSHTarget
    trusted_before = _trust_entries()
    host = SSHTarget(f"root@{ssh_host.host}", key_file=ssh_host.key_file, known_hosts=ssh_host.known_hosts)
    try:
        run_dir = ttr.run(ttr.Params(runtimes="native,docker", apps="go-http", caches="warm,first",
                                     protocols="fair", repetitions=2, profile="quick", cpus="1", memory="256m",
                                     progress=False, registry=host))
    finally:
        host.close()
    _check_first_starts(run_dir, host.name)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["notes"]["registry"]["address"].startswith(ssh_host.host + ":")
    _nothing_left(local, trusted_before)


_FIRST_STARTS = """
import sys
from edgebench.experiments import time_to_ready
time_to_ready.run(time_to_ready.Params(runtimes="docker", apps="go-http,node-http", caches="first", protocols="fair",
                                       repetitions=20, profile="quick", cpus="1", run_id=sys.argv[1], progress=False))
"""


def test_ctrl_c_during_first_starts_leaves_no_registry_trust_or_tag(local, docker_ready, cgroups_ready, tmp_path,
                                                                    no_leftovers):
    """Interrupted while it pulls and starts: the child dies of the signal, its rows so far are
    kept, and the registry, its storage, the device's trust entry and the run's tags are gone."""
    import signal
    import subprocess
    import sys

    from conftest import sigint_default, vm_tagged_processes
    from edgebench.results import load_meta
    from edgebench.waiting import wait_until
    _registry_ready(local)
    run_id = "first-interrupt"
    # What another run on this machine (a device's, whose registry is here) holds is not this one's.
    trusted_before, registries_before = _trust_entries(), _registry_folders(local)
    proc = subprocess.Popen([sys.executable, "-c", _FIRST_STARTS, run_id], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path)),
                            preexec_fn=sigint_default)
    try:
        pulls = tmp_path / "time_to_ready" / run_id / "raw"

        def two_pulls() -> bool:
            if pulls.is_dir() and len([p for p in pulls.iterdir() if "pull-" in p.name]) >= 2:
                return True
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            return False

        assert wait_until(two_pulls, 120, 0.05), "no first start within 120 s"
        assert any(comm.startswith("docker-regis") for _, comm in vm_tagged_processes())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGINT, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert load_meta(tmp_path / "time_to_ready" / run_id)["status"] == "interrupted"
    assert _trust_entries() <= trusted_before
    assert _registry_folders(local) <= registries_before


def _trust_entries() -> set[str]:
    return set(os.listdir("/etc/docker/certs.d")) if os.path.isdir("/etc/docker/certs.d") else set()


def _registry_folders(local) -> set[str]:
    return set((local.run(["sh", "-c", "ls -d $HOME/.cache/edgebench/registry/*/ 2>/dev/null"],
                          check=False).stdout or "").split())


def test_the_registrys_certificate_is_valid_from_a_day_ago(tmp_path):
    """Found on the emulated debian-v2, whose clock ran 4 minutes behind the host's under TCG: a
    certificate valid from the host's 'now' was not yet valid there, and every first start
    failed ('unable to verify the legitimacy of the server'). A Pi without a real-time clock can
    lag the same way."""
    import subprocess
    from datetime import datetime, timedelta, timezone

    from edgebench.runtimes import image_registry as registry
    r = subprocess.run(["sh", "-c", registry._CERTIFICATE, "cert", str(tmp_path), "IP:10.232.1.1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-400:]
    text = subprocess.run(["openssl", "x509", "-in", str(tmp_path / "cert.pem"), "-noout", "-startdate",
                           "-ext", "subjectAltName"], capture_output=True, text=True).stdout
    start = datetime.strptime(text.split("notBefore=")[1].splitlines()[0], "%b %d %H:%M:%S %Y %Z")
    assert start.replace(tzinfo=timezone.utc) < datetime.now(timezone.utc) - timedelta(hours=12)
    assert "IP Address:10.232.1.1" in text
