"""The Docker daemon on a target, as `make provision` prepares it for DockerRuntime: what the
runtime needs installed (docker.io brings dockerd; containerd, runc and iptables run under it)
and how the daemon is started: systemctl when systemd is PID 1, else `dockerd` in the
background in its own session (it outlives the command and the SSH session), logging to the
workspace."""

from __future__ import annotations

import time

from edgebench.needs import Need, Preparation, TargetNeeds, Version, tail

WAIT_S = 60  # for the daemon to answer once started

NEEDS = TargetNeeds(
    "docker runtime",
    (Need("docker.io", (("dockerd",),), client="docker",
          conflicts=("docker-ce", "docker-ce-cli", "moby-engine", "moby-cli", "podman-docker")),
     Need("containerd", (("containerd",),), conflicts=("containerd.io",)),
     Need("runc", (("runc",),), conflicts=("containerd.io",)),
     Need("iptables", (("iptables",),))),  # dockerd programs iptables (iptables-nft on Debian 12)
    # What the runtime runs on: a client on PATH says nothing about these.
    (Version("docker", ("docker", "--version")), Version("dockerd", ("dockerd", "--version")),
     # What the daemon that answers says it is (Docker Desktop, a remote context: not dockerd's).
     Version("docker_server", ("docker", "version", "--format", "{{.Server.Version}}"), recorded_only=True),
     Version("containerd", ("containerd", "--version")), Version("runc", ("runc", "--version")),
     Version("iptables", ("iptables", "--version"))),
    ("Docker Engine (dockerd, containerd, runc, docker)", "iptables"))


def answers(prep: Preparation) -> bool:
    return prep.target.run([*prep.sudo, "docker", "version", "--format", "{{.Server.Version}}"],
                           timeout=20, check=False).ok


def prepare(prep: Preparation) -> None:
    """Start the daemon unless it answers already."""
    if "docker" not in prep.commands:
        prep.log("no docker CLI: the Docker daemon is not started")
        return
    if answers(prep):
        return
    planned = prep.check and "docker.io" in prep.planned
    if "dockerd" not in prep.commands and not planned:  # a client alone (the plan says why)
        prep.log("a docker CLI but no dockerd: the Docker daemon cannot be started")
        return
    how = "systemctl start docker" if prep.systemd else "dockerd in the background"
    if prep.check:
        prep.did(f"start the Docker daemon ({how})")
        return
    prep.log(f"starting the Docker daemon ({how})")
    prep.did(f"started the Docker daemon ({how})")
    target = prep.target
    log = f"{target.workspace}/dockerd.log"
    if prep.systemd:
        r = target.run([*prep.sudo, "systemctl", "start", "docker"], timeout=120, check=False)
        if not r.ok:
            prep.fail("docker daemon", f"systemctl start docker failed: {tail(r.stderr)}")
            return
    else:
        target.run(["mkdir", "-p", target.workspace])
        # Own session and no open pipes: it outlives this command (and the SSH session).
        target.run([*prep.sudo, "sh", "-c", 'PATH="$PATH:/usr/sbin:/sbin"; '
                    'setsid nohup dockerd >>"$1" 2>&1 </dev/null &', "start-dockerd", log], timeout=30)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if answers(prep):
            return
        time.sleep(1)
    log_tail = "" if prep.systemd else tail(target.read_text(log, missing_ok=True) or "", 5)
    prep.fail("docker daemon", f"started, but `docker version` gets no answer after {WAIT_S} s"
                               f"{'; ' + log + ': ' + log_tail if log_tail else ''}")
