"""The Docker daemon on a target, as `make provision` prepares it for DockerRuntime: what the
runtime needs installed (docker.io brings dockerd; containerd, runc and iptables run under it)
and how the daemon is started: systemctl when systemd is PID 1, else `dockerd` in the
background in its own session (it outlives the command and the SSH session), logging to the
workspace."""

from __future__ import annotations

import json

from edgebench.provisioning.needs import Need, Preparation, TargetNeeds, Version, tail
from edgebench.waiting import wait_until
from edgebench.scripts import shell_script

WAIT_S = 60  # for the daemon to answer once started

NEEDS = TargetNeeds(
    "docker runtime",
    (Need("docker.io", (("dockerd",),), client="docker",
          conflicts=("docker-ce", "docker-ce-cli", "moby-engine", "moby-cli", "podman-docker")),
     Need("containerd", (("containerd",),), conflicts=("containerd.io",)),
     Need("runc", (("runc",),), conflicts=("containerd.io",)),
     Need("iptables", (("iptables",),)),  # dockerd programs iptables (iptables-nft on Debian 12)
     # Where the kernel enables AppArmor (Debian's does), dockerd loads its docker-default profile
     # with apparmor_parser, and without it every `docker run` fails. docker.io only recommends
     # the package, and provisioning installs no recommends (found on the emulated debian-v2).
     Need("apparmor", (("apparmor_parser",),))),
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
    if wait_until(lambda: answers(prep), WAIT_S, 1):
        return
    log_tail = "" if prep.systemd else tail(target.read_text(log, missing_ok=True) or "", 5)
    prep.fail("docker daemon", f"started, but `docker version` gets no answer after {WAIT_S} s"
                               f"{'; ' + log + ': ' + log_tail if log_tail else ''}")


# Docker with crun (docker-crun): Debian's crun, registered with dockerd as an OCI runtime named
# "crun" in /etc/docker/daemon.json ("runtimes" is one of the settings dockerd reloads on SIGHUP,
# so no restart and no container is touched); runc stays the default.
CRUN = "crun"
DAEMON_JSON = "/etc/docker/daemon.json"

CRUN_NEEDS = TargetNeeds(
    "docker runtime with crun",
    (*NEEDS.packages, Need("crun", (("crun",),))),
    (*NEEDS.versions, Version("crun", ("crun", "--version"))),
    (*NEEDS.by_hand, "crun"))


def registered_runtimes(target, sudo=()) -> set[str]:
    """The OCI runtimes the answering daemon knows (`docker info`)."""
    r = target.run([*sudo, "docker", "info", "--format", "{{json .Runtimes}}"], timeout=30, check=False)
    try:
        return set(json.loads(r.stdout)) if r.ok else set()
    except ValueError:
        return set()


# A hybrid cgroup host (v1 controllers, plus the unified v2 hierarchy) whose unified hierarchy
# holds controllers: crun (1.8) refuses to create a container there ("cgroups in hybrid mode not
# supported, drop all controllers from cgroupv2"). systemd's hybrid layout mounts every controller
# as v1, which moves it off the unified hierarchy; prints the controllers left there.
UNIFIED = "/sys/fs/cgroup/unified"
_CONTROLLERS_ON_UNIFIED = shell_script("docker_daemon_controllers_on_unified.sh")


def controllers_on_unified(target) -> list[str]:
    return target.run(["sh", "-c", _CONTROLLERS_ON_UNIFIED, "unified", UNIFIED], check=False).stdout.split()


def prepare_crun(prep: Preparation) -> None:
    """Register crun with the daemon unless it knows it: add it to daemon.json (keeping what is
    there) and have dockerd reload its configuration. On a hybrid cgroup host, mount the
    controllers left on the unified hierarchy as v1 (as systemd's hybrid layout does), which crun
    needs; not persistent, so every provisioning checks it again."""
    target = prep.target
    if not answers(prep):
        return
    left = controllers_on_unified(target) if target.which(CRUN) else []
    if left and prep.check:
        prep.did(f"mount the cgroup controllers {', '.join(left)} as v1 (crun refuses them on the unified hierarchy)")
    elif left:
        for controller in left:
            r = target.run([*prep.sudo, "sh", "-c", 'mkdir -p "/sys/fs/cgroup/$1" && '
                            'mount -t cgroup -o "$1" cgroup "/sys/fs/cgroup/$1"', "mount-v1", controller], check=False)
            if not r.ok:
                prep.fail("crun for Docker",
                          f"mounting the {controller} cgroup controller as v1 failed: {tail(r.stderr)}")
                return
        prep.did(f"mounted the cgroup controllers {', '.join(left)} as v1 (crun refuses them on the unified hierarchy)")
    if CRUN in registered_runtimes(target, prep.sudo):
        return
    crun = target.which(CRUN)
    if not crun:
        if not prep.check:
            prep.log("no crun: Docker with crun (docker-crun) is not registered")
        return
    if prep.check:
        prep.did(f"register crun with the Docker daemon ({DAEMON_JSON}, reload)")
        return
    text = target.run([*prep.sudo, "cat", DAEMON_JSON], check=False).stdout.strip()
    try:
        config = json.loads(text) if text else {}
    except ValueError:
        prep.fail("crun for Docker", f"{DAEMON_JSON} is not JSON; add "
                                     f"\"runtimes\": {{\"crun\": {{\"path\": \"{crun}\"}}}} by hand and reload dockerd")
        return
    config.setdefault("runtimes", {})[CRUN] = {"path": crun}
    target.run([*prep.sudo, "mkdir", "-p", "/etc/docker"])
    target.run([*prep.sudo, "sh", "-c", f"cat > {DAEMON_JSON}"], stdin=json.dumps(config, indent=2) + "\n")
    how = (["systemctl", "reload", "docker"] if prep.systemd
           else ["sh", "-c", 'kill -HUP $(cat /var/run/docker.pid 2>/dev/null || pidof dockerd)'])
    target.run([*prep.sudo, *how], timeout=60, check=False)
    if wait_until(lambda: CRUN in registered_runtimes(target, prep.sudo), WAIT_S, 0.5):
        prep.did(f"registered crun with the Docker daemon ({DAEMON_JSON})")
        return
    prep.fail("crun for Docker", f"added crun to {DAEMON_JSON}, but the daemon does not list it after a reload")
