"""Docker containers, driven with the docker CLI on the target (the same commands a user
would type, and the same path over SSH as locally).

Images build two ways:
- `offline`: package what is already on the target: the static Go binary into `FROM scratch`;
  for Node the target's node binary, the shared libraries `ldd` lists and the script into a
  `FROM scratch` image. Needs no registry.
- `published`: the paper's multi-stage Dockerfiles in `dockerfiles/` (golang builder to
  scratch; node:alpine). Needs a registry to pull the base images.

The module holds DockerRuntime (package, launch plan, attach, why a container died, clean-up,
registry images, batch runs), DockerCrunRuntime (the same images and limits run by crun, a small
subclass that differs only where crun does) and the parsers of what the docker CLI prints. It is
one module because a runtime is one implementation of the interface in runtimes/base.py, read
method by method against it and against the other runtimes; the daemon's installation and
start-up, which `make provision` needs without a runtime, are apart in docker_daemon.py.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from edgebench import rootfs
from edgebench.apps import BuiltApp
from edgebench.cgroups import (AppliedLimits, counting_slices, kernel_oom_kill, memory_thrash, read_limits,
                              remove_cgroup_everywhere, slice_glob, slice_unit, start_counting_slice,
                              stop_counting_slices)
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.paths import DOCKERFILES_DIR
import edgebench.runtimes.docker_daemon as docker_daemon
from edgebench.runtimes.base import Runtime, app_env
from edgebench.runtimes.contract import Artifact, Availability, BatchOutcome, Instance, LaunchPlan, Limits
from edgebench.targets import sh
from edgebench.scripts import shell_script

BUILD_MODES = ("offline", "published")
LABEL = "edgebench.run"
BUILD_TIMEOUT_S = 900
FIRST_TAG = "first-"  # an image's tag in the run's registry: first-<run tag>

_TIMED_PULL = shell_script("docker_timed_pull.sh")

# Lays out rootfs/ for an offline image of a dynamically linked binary: the binary under
# /usr/local/bin/NAME, every library ldd lists, an empty /tmp, and extra files (SRC DEST ...).
_BUNDLE_ROOTFS = r"""
set -e
ctx=$1; binary=$(readlink -f "$2"); name=$3; shift 3
rm -rf "$ctx"; mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/tmp"
chmod 1777 "$ctx/rootfs/tmp"
""" + rootfs.minimal_users('"$ctx/rootfs"') + r"""cp "$binary" "$ctx/rootfs/usr/local/bin/$name"
""" + rootfs.copy_libraries('"$binary"', '"$ctx/rootfs"') + r"""while [ $# -ge 2 ]; do
  mkdir -p "$ctx/rootfs$(dirname "$2")"
  if [ -d "$1" ]; then
    cp -rL "$1" "$ctx/rootfs$2"
    # The shared objects in a folder (Python's extensions) need their libraries too.
""" + rootfs.copy_folder_libraries('"$1"', '"$ctx/rootfs"') + r"""  else
    cp -L "$1" "$ctx/rootfs$2"
  fi
  shift 2
done
"""


INPUTS_LABEL = "edgebench.inputs"  # on a bundle's image: the digest of what went into it


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class DockerRuntime(Runtime):
    name = "docker"
    colour = "#1f77b4"
    build_modes = BUILD_MODES
    min_memory_mb = 6  # dockerd refuses --memory below 6 MiB
    needs = docker_daemon.NEEDS
    prepare_target = staticmethod(docker_daemon.prepare)
    oci_runtime = ""  # the daemon's default (runc)

    @classmethod
    def leftovers(cls, target, tag_prefix: str = "") -> list[str]:
        r = target.run(["docker", "ps", "-a", "--filter", f"label={LABEL}", "--format",
                        f'{{{{.Names}}}}\t{{{{.Label "{LABEL}"}}}}\t{{{{.State}}}}'], check=False, timeout=30)
        rows = [line.split("\t") + ["", ""] for line in r.stdout.splitlines()]
        found = [f"container {name} ({state or 'state unknown'})" for name, tag, state, *_ in rows
                 if tag.startswith(tag_prefix)]
        slices = counting_slices(target, slice_glob(f"eb-{tag_prefix}"))
        return (found + [f"image {ref}" for ref in first_start_refs(target, tag_prefix)]
                + [f"counting slice {unit}" for unit in slices])

    def availability(self) -> Availability:
        if not self.target.which("docker"):
            return Availability(False, f"no docker CLI on {self.target.name}; install docker.io "
                                "(or Docker Engine) there")
        r = self.target.run(["docker", "version", "--format", "{{.Server.Version}}"], timeout=20,
                            check=False)
        if not r.ok:
            tail = (r.stderr.strip().splitlines() or ["no answer"])[-1]
            daemon = self.target.run('PATH="$PATH:/usr/sbin:/sbin"; command -v dockerd', check=False)
            if not daemon.stdout.strip():
                return Availability(False, f"{self.target.name} has a docker CLI but no Docker daemon "
                                    "(no dockerd): `make provision` installs docker.io, which brings it")
            return Availability(False, f"the Docker daemon on {self.target.name} does not answer "
                                f"({tail}); start it (`systemctl start docker` or `dockerd &`)")
        return Availability(True)

    def describe(self) -> str:
        r = self.target.run(["docker", "version", "--format", "{{.Server.Version}}"], timeout=20, check=False)
        return f"Docker {r.stdout.strip()}"

    # -- images ------------------------------------------------------------------
    def package(self, built: BuiltApp, build: str = "offline") -> Artifact:
        if build not in BUILD_MODES:
            raise ConfigError(f"docker build mode {build!r} unknown; use one of {', '.join(BUILD_MODES)}")
        app = built.app
        # The build's context is this run's own: a run beside it (a test session) building the same
        # app would empty a shared folder mid-build ("lstat .../Dockerfile: no such file").
        ctx = self.build_context(app.name, build)
        tag = f"edgebench/{app.name}:{build}"
        inputs = None
        if build == "offline":
            dockerfile = DOCKERFILES_DIR / f"offline-{app.language}.Dockerfile"
            if app.language == "go":
                self.target.run(["sh", "-c", 'rm -rf "$1" && mkdir -p "$1" && cp "$2" "$1/app"', "ctx",
                                 ctx, built.remote_path])
            elif app.language == "node":
                node = self.target.which("node")
                self.target.run(["sh", "-c", _BUNDLE_ROOTFS, "bundle", ctx, node, "node",
                                 built.remote_path, "/app/server.js"])
            elif app.language == "python":  # the target's interpreter, its standard library and the wheels
                d = built.details
                data = [x for f in d.get("data", []) for x in (f, f)]
                bundle = [d["python"], "python3", built.remote_path, "/app/main.py", d["stdlib"], d["stdlib"],
                          d["site"], d["site"], *data]
                # Hundreds of MB: copied and built again only when what goes in changed (the site's and
                # the data's folders are named by their digests).
                inputs = hashlib.sha256(json.dumps([bundle, d.get("python_version"), _sha(app.source_dir / app.entry),
                                                    _sha(dockerfile)]).encode()).hexdigest()[:16]
                if self.inspect(tag, f'{{{{index .Config.Labels "{INPUTS_LABEL}"}}}}') == inputs:
                    return self._artifact(built, build, tag, dockerfile, cmd=None, image_id=self.image_id(tag))
                self.target.run(["sh", "-c", _BUNDLE_ROOTFS, "bundle", ctx, *bundle])
            else:  # a tool, run through tools/steps; its data files at the same path as on the target
                data = [x for f in built.details.get("data", []) for x in (f, f)]
                self.target.run(["sh", "-c", _BUNDLE_ROOTFS, "bundle", ctx, built.remote_path, app.entry,
                                 built.argv[0], "/usr/local/bin/steps", *data])
        else:
            dockerfile = DOCKERFILES_DIR / f"{app.name}.Dockerfile"
            self.target.run(["sh", "-c", 'rm -rf "$1" && mkdir -p "$1"', "ctx", ctx])
            for f in app.source_files:
                self.target.put(f, f"{ctx}/{f.relative_to(app.source_dir)}")
        self.target.upload_if_changed(dockerfile, f"{ctx}/Dockerfile")
        label = ["--label", f"{INPUTS_LABEL}={inputs}"] if build == "offline" and app.language == "python" else []
        cmd = ["docker", "build", "-q", "-t", tag, *label, "-f", f"{ctx}/Dockerfile", ctx]
        before = self.image_id(tag)
        r = self.target.run(cmd, timeout=BUILD_TIMEOUT_S, check=False)
        if not r.ok:
            hint = (" (the published build pulls base images: it needs a registry; use build='offline' "
                    "without internet)") if build == "published" else ""
            raise EdgebenchError(f"docker build of {tag} on {self.target.name} failed{hint}:\n"
                                 f"{r.stderr[-1500:]}")
        if before and before != r.stdout.strip():
            # The image the tag left: untagged, it would stay on the device's disk for good, one
            # per rebuilt app and run. Docker refuses (and we let it) while a container uses it.
            self.target.run(["docker", "image", "rm", before], check=False)
        self.target.run(["rm", "-rf", ctx], check=False)  # the image has it all; the device's disk is small
        return self._artifact(built, build, tag, dockerfile, cmd, r.stdout.strip())

    def build_context(self, app: str, build: str) -> str:
        return f"{self.target.workspace}/docker/{self.run_tag}-{app}-{build}"

    def _artifact(self, built: BuiltApp, build: str, tag: str, dockerfile: Path, cmd: list[str] | None,
                  image_id: str | None) -> Artifact:
        size = int(self.target.run(["docker", "image", "inspect", "-f", "{{.Size}}", tag]).stdout.strip())
        return Artifact(self.name, built.app.name, tag, size, built.size_bytes, built, build=build,
                        details={"image_id": image_id, "dockerfile": dockerfile.name,
                                 "build_command": sh(cmd) if cmd else "(the image built from the same inputs before)"})

    def image_id(self, ref: str) -> str | None:
        r = self.target.run(["docker", "image", "inspect", "-f", "{{.Id}}", ref], check=False)
        return r.stdout.strip() if r.ok and r.stdout.strip() else None

    # -- services ----------------------------------------------------------------
    # bridge: published with -p, reached through docker-proxy and the bridge (Docker's default);
    # host: --network host, the app listens on the host's port itself.
    network_modes = ("bridge", "host")

    def run_args(self, limits: Limits) -> list[str]:
        args = ["--runtime", self.oci_runtime] if self.oci_runtime else []
        if limits.cpus is not None:
            args.append(f"--cpus={limits.cpus:g}")
        if limits.memory_mb is not None:
            args.append(f"--memory={int(limits.memory_mb)}m")
            if not limits.swap:
                args.append(f"--memory-swap={int(limits.memory_mb)}m")
        if limits.cpuset:
            args.append(f"--cpuset-cpus={limits.cpuset}")
        return args

    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        self.check_limits(artifact.app, limits)
        name = self.new_name(artifact.app)
        app = artifact.built.app
        if (limits.network or self.network_modes[0]) == "host":
            listen, network, network_path = port, ["--network", "host"], "host network"
        else:
            listen = app.container_port
            network, network_path = ["-p", f"{port}:{listen}"], "docker-proxy+bridge"
        env = [x for e in app_env(artifact.built, limits, listen) for x in ("-e", e)]
        # A tool serves as itself; the image's entrypoint (tools/steps) is for its batch phases.
        entry = ["--entrypoint", app.entry] if app.language == "tool" else []
        argv = ["docker", "run", "-d", "--name", name, "--label", f"{LABEL}={self.run_tag}", *network,
                *self.run_args(limits), *env, *entry, artifact.ref, *artifact.built.service_args(listen)]
        self.target.run(["mkdir", "-p", self.logs_dir()])
        return LaunchPlan(self.name, artifact.app, name, argv, port, detaches=True, limits=limits,
                          stdout_path=f"{self.logs_dir()}/{name}.out",
                          stderr_path=f"{self.logs_dir()}/{name}.err",
                          network_path=network_path, state={"container": name})

    def inspect(self, name: str, fmt: str) -> str | None:
        r = self.target.run(["docker", "inspect", "-f", fmt, name], check=False)
        return r.stdout.strip() if r.ok else None

    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        name = plan.state["container"]
        pid = int(self.inspect(name, "{{.State.Pid}}") or 0) or None
        applied = read_limits(self.target, pid) if pid else None
        host_config = self.inspect(name, "{{json .HostConfig}}")
        return Instance(self.name, plan.app, name, plan.port, f"http://127.0.0.1:{plan.port}", pid,
                        plan.limits, applied, plan.network_path, plan,
                        details={"container_id": self.inspect(name, "{{.Id}}"),
                                 "oci_runtime": self.inspect(name, "{{.HostConfig.Runtime}}"),
                                 "host_config": host_config})

    def app_output(self, instance: Instance) -> str:
        r = self.target.run(["docker", "logs", instance.plan.state["container"]], check=False)
        return r.stdout

    def exit_state(self, name: str) -> dict[str, str]:
        """The container's end as `docker inspect` tells it, in one call (empty values if gone)."""
        keys = ("oom", "code", "id", "status", "error")
        text = self.inspect(name, "{{.State.OOMKilled}}|{{.State.ExitCode}}|{{.Id}}|{{.State.Status}}|"
                            "{{.State.Error}}") or ""
        return dict(zip(keys, (text.split("|", len(keys) - 1) + [""] * len(keys))))

    def oom_kill_evidence(self, state: dict[str, str]) -> str | None:
        """Whether the container (its `exit_state`) was OOM-killed and who says so. Docker's
        OOMKilled flag misses a kill right after start when containerd handles the exit before the
        OOM event (containerd/containerd#8180; seen here once in a CI run): exit code 137 alone is
        any SIGKILL, so the kernel's log, which names the container's cgroup, decides then."""
        code = state["code"]
        if state["oom"] == "true":
            return f"OOMKilled (docker inspect), exit code {code}"
        task = kernel_oom_kill(self.target, state["id"]) if code == "137" and state["id"] else None
        return f"OOMKilled (kernel log: {task} in the container's memory cgroup), exit code {code}" if task else None

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        name = plan.state.get("container")
        state = self.exit_state(name) if name else None
        err = (self.target.read_text(plan.stderr_path, missing_ok=True) or "").strip()
        if state and state["status"]:
            code, status, error = state["code"], state["status"], state["error"]
            oom = self.oom_kill_evidence(state)
            if oom:
                return oom
            if status in ("exited", "dead"):
                logs = self.target.run(["docker", "logs", "--tail", "3", name], check=False)
                return f"container {status} with exit code {code} {error} {logs.stderr.strip()[-300:]}".strip()
        return daemon_error(err)

    def scratch_storage(self) -> str:
        r = self.target.run(["docker", "info", "-f", "{{.Driver}}|{{range .DriverStatus}}{{index . 0}}="
                             "{{index . 1}};{{end}}"], check=False, timeout=30)
        driver, _, status = r.stdout.strip().partition("|")
        backing = dict(kv.split("=", 1) for kv in status.split(";") if "=" in kv).get("Backing Filesystem")
        return (f"container layer ({driver or 'storage driver unknown'}"
                f"{' on ' + backing if backing else ''}), {self.scratch_dir()}")

    def memory_thrash(self, plan: LaunchPlan) -> str | None:
        name = plan.state.get("container")
        pid = int(self.inspect(name, "{{.State.Pid}}") or 0) if name else 0
        return memory_thrash(self.target, pid=pid) if pid else None

    def died(self, plan: LaunchPlan) -> str | None:
        status = self.inspect(plan.state["container"], "{{.State.Status}}")
        if status in ("exited", "dead"):
            return self.failure_reason(plan)
        return None

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        name = plan.state.get("container")
        if name:
            self.target.run(["docker", "rm", "-f", "-v", name], timeout=60, check=False)
        counting = plan.state.pop("counting_cgroup", None)
        if counting:
            remove_cgroup_everywhere(self.target, counting)
        counting_slice = plan.state.pop("counting_slice", None)
        if counting_slice:
            stop_counting_slices(self.target, counting_slice)

    def cleanup(self) -> None:
        super().cleanup()
        # Anything labelled with this run that a crash kept from the bookkeeping.
        r = self.target.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}={self.run_tag}"], check=False)
        ids = r.stdout.split()
        if ids:
            self.target.run(["docker", "rm", "-f", "-v", *ids], timeout=60, check=False)
        if getattr(self, "_cgroup_driver", "") == "systemd":
            stop_counting_slices(self.target, slice_glob(f"eb-{self.run_tag}-"))
        # The run's registry tags (first starts); untagging leaves the build's tag and its image.
        refs = first_start_refs(self.target, self.run_tag)
        if refs:
            self.target.run(["docker", "image", "rm", *refs], timeout=60, check=False)

    # -- first starts: pulled from the run's registry -----------------------------
    no_image_fetch = ""

    def publish_image(self, artifact: Artifact, registry) -> Artifact:
        ref = registry.ref(f"edgebench/{artifact.app}", f"{FIRST_TAG}{self.run_tag}")
        self.target.run(["docker", "tag", artifact.ref, ref])
        r = self.target.run(["docker", "push", ref], timeout=BUILD_TIMEOUT_S, check=False)
        if not r.ok:
            raise EdgebenchError(f"docker push {ref} (to the registry on {registry.host.name}) failed: "
                                 f"{(r.stderr or r.stdout).strip()[-600:]}")
        return replace(artifact, ref=ref, details={**artifact.details, "local_ref": artifact.ref,
                                                   "registry": registry.name, "push_output": r.stdout[-2000:]})

    def drop_image(self, artifact: Artifact) -> None:
        # Every tag of the image goes (the build's too), or its layers would stay "Already exists".
        # What is checked afterwards is that image, by its id: the build's tag is one name on a
        # daemon others use too, and another run (a test session beside `make figures`) may have
        # pointed it at an image of its own build meanwhile, which is not this run's to remove.
        image_id = self.inspect(artifact.ref, "{{.Id}}") or self.inspect(artifact.details["local_ref"], "{{.Id}}")
        if image_id:
            self.target.run(["docker", "image", "rm", "-f", image_id], timeout=120)
        if self.inspect(artifact.ref, "{{.Id}}") or (image_id and self.inspect(image_id, "{{.Id}}")):
            raise EdgebenchError(f"{artifact.ref} is still on {self.target.name} after docker image rm")

    def fetch_image(self, artifact: Artifact) -> dict:
        r = self.target.run(["sh", "-c", _TIMED_PULL, "timed-pull", artifact.ref], timeout=BUILD_TIMEOUT_S,
                            check=False)
        fields = (r.stdout.strip().splitlines() or [""])[-1].split()
        if len(fields) != 4 or fields[0] != "edgebench-pull" or fields[1] != "0":
            raise EdgebenchError(f"docker pull {artifact.ref} on {self.target.name} failed: "
                                 f"{(r.stderr or r.stdout).strip()[-600:]}")
        # The other starts of the run use the build's tag: it points at the pulled image again.
        self.target.run(["docker", "tag", artifact.ref, artifact.details["local_ref"]])
        return {"fetch_ms": (int(fields[3]) - int(fields[2])) / 1e6,
                "layers_fetched": r.stdout.count("Pull complete"), "layers_present": r.stdout.count("Already exists"),
                "command": f"docker pull {artifact.ref}", "output": r.stdout + r.stderr}

    # -- batch -------------------------------------------------------------------
    def cgroup_driver(self) -> str:
        if not hasattr(self, "_cgroup_driver"):
            self._cgroup_driver = self.target.run(["docker", "info", "--format", "{{.CgroupDriver}}"],
                                                  check=False).stdout.strip()
        return self._cgroup_driver

    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        name = self.new_name(artifact.app)
        plan = LaunchPlan(self.name, artifact.app, name, [], 0, limits=limits, network_path="none",
                          stdout_path=f"{self.logs_dir()}/{name}.out",
                          stderr_path=f"{self.logs_dir()}/{name}.err", state={"container": name})
        parent = []
        driver = self.cgroup_driver()
        if driver not in ("cgroupfs", "systemd"):
            plan.counting_note = (f"dockerd uses the {driver or 'unknown'} cgroup driver; counting needs "
                                  "cgroupfs or systemd")
        elif not self.target.is_root:
            plan.counting_note = f"creating a cgroup parent needs root on {self.target.name}"
        elif driver == "systemd":
            # The container's scope goes when it exits; the run's own slice keeps the counts.
            unit = slice_unit(name)
            plan.state["counting_slice"] = unit
            plan.counting_cgroup = start_counting_slice(self.target, unit)
            parent = [f"--cgroup-parent={unit}"]
        else:
            # The container's own cgroup is removed when it exits; its parent keeps the counts.
            plan.counting_cgroup = self.prepare_counting(self.counting_cgroup_name(name))
            plan.state["counting_cgroup"] = plan.counting_cgroup
            parent = [f"--cgroup-parent=/{plan.counting_cgroup}"]
        env = [x for e in app_env(artifact.built, limits) for x in ("-e", e)]
        # A batch program on the host's network (paper 001's 'Host' rows), else Docker's bridge.
        network = ["--network", "host"] if limits.network == "host" else []
        if limits.network == "host":
            plan.network_path = "host network"
        plan.argv = ["docker", "run", "--name", name, "--label", f"{LABEL}={self.run_tag}", *parent,
                     *self.run_args(limits), *network, *env, artifact.ref, *args]
        return plan

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        name = plan.state["container"]
        applied = limits_from_host_config(self.inspect(name, "{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} "
                                                       "{{.HostConfig.MemorySwap}} {{.HostConfig.CpusetCpus}}"))
        state = self.exit_state(name)
        oom = self.oom_kill_evidence(state)
        return BatchOutcome(applied, oom_killed=bool(oom), details={"container_exit_code": state["code"] or None,
                                                                    "oom_evidence": oom})


class DockerCrunRuntime(DockerRuntime):
    """Docker with crun as the OCI runtime instead of runc (paper 001 counts runc's start-up among
    a container's costs): the same images, daemon and limits; `docker run --runtime crun`. It
    joins a run when named (runtimes="auto,docker-crun" or a list), not under "auto" alone."""
    name = "docker-crun"
    colour = "#17becf"
    in_auto = False
    oci_runtime = docker_daemon.CRUN
    needs = docker_daemon.CRUN_NEEDS
    prepare_target = staticmethod(docker_daemon.prepare_crun)

    @classmethod
    def leftovers(cls, target, tag_prefix: str = "") -> list[str]:
        return []  # its containers carry Docker's label: DockerRuntime.leftovers lists them

    def availability(self) -> Availability:
        docker = super().availability()
        if not docker:
            return docker
        if docker_daemon.CRUN not in docker_daemon.registered_runtimes(self.target):
            why = ("crun is not installed" if not self.target.which("crun") else
                   f"the Docker daemon does not know crun (not in {docker_daemon.DAEMON_JSON})")
            return Availability(False, f"{why} on {self.target.name}: `make provision` installs crun and registers it")
        left = docker_daemon.controllers_on_unified(self.target)
        if left:
            return Availability(False, f"{self.target.name} mixes cgroup v1 and v2 with {', '.join(left)} on the "
                                "unified hierarchy, which crun refuses; `make provision` mounts them as v1")
        return Availability(True)

    def describe(self) -> str:
        crun = self.target.run(["crun", "--version"], check=False).stdout.strip().splitlines()
        return f"{super().describe()} with {crun[0] if crun else 'crun'}"


def first_start_refs(target, run_tag_start: str) -> list[str]:
    """Image references a run whose tag starts so gave its registry (first starts)."""
    r = target.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"], check=False, timeout=30)
    return [ref for ref in r.stdout.split() if ref.rpartition(":")[2].startswith(FIRST_TAG + run_tag_start)]


def daemon_error(stderr: str) -> str | None:
    """The line that says why `docker run` failed: the daemon's, not the CLI's closing
    "Run 'docker run --help' for more information"."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    said = [line for line in lines if "Error response from daemon" in line or line.startswith("docker: ")]
    return (said or lines or [None])[-1]


def limits_from_host_config(text: str | None) -> AppliedLimits | None:
    """Docker's record of the limits, for containers whose cgroup is already gone."""
    if not text:
        return None
    nano, mem, memsw, *cpuset = text.split(" ") + [""]
    nano_i, mem_i, memsw_i = int(nano or 0), int(mem or 0), int(memsw or 0)
    return AppliedLimits(cpus=nano_i / 1e9 if nano_i else None,
                         memory_mb=mem_i / 2**20 if mem_i else None,
                         swap_mb=(memsw_i - mem_i) / 2**20 if memsw_i > 0 and mem_i else None,
                         cpuset=(cpuset[0] or None) if cpuset else None, cgroup_version=None,
                         cgroup_path="docker inspect HostConfig", oom_kills=None)
