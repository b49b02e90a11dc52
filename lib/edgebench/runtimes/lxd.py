"""LXD system containers, driven with the `lxc` CLI on the target (the same commands a user
would type, and the same path over SSH as locally).

The artifact is edgebench's base image (debootstrap minbase of the target's release with a
minimal init, `edgebench.runtimes.lxd_image`) plus the app, pushed into each new container before the
clock starts. Node apps run the target's own `node` (the binary the native runtime and Docker's
offline image use), bind-mounted read-only into the container at /usr/local/bin/node, with any
library `ldd` lists that the image lacks or holds in another version mounted over the image's
(none on a Debian 12 target: the image is the same release). Tools (sysbench) are the target's
binary mounted the same way, run through tools/steps, which is pushed.

One start, as `launch_plan` + the probe see it (start_mode="service", the default):
- untimed: create the container from the image (on a `dir` pool this unpacks the whole root
  filesystem: `init_s` in the details), boot it once and stop it (LXD rewrites the rootfs' owners
  to the container's uid map on the first start of an unprivileged container: ~150 ms here, a
  storage cost like the unpacking: `first_boot_s`), add the proxy device for the port, push the
  app and the service definition (/etc/edgebench/service) that the image's init starts;
- timed (the probe's launch): `lxc start NAME`: namespaces, cgroup, veth on the bridge, the
  proxy, init, which starts the app at once; the probe polls the forwarded port until the app
  answers. So time to ready = boot of an existing system container up to its service answering,
  without `lxc init`. LXD itself waits for the proxy device's helper by polling its log once a
  second, so `lxc start` returns about 1 s after the app can already answer; the time it returned
  is written to a file on the target (`container_started_unix_ns` in the details). After
  `lxc start` the launcher becomes `lxc exec NAME -- edgebench-wait-app`, which exits 1 when the
  app dies, so the probe fails at once (OOM kill, crash) instead of waiting for its timeout.
start_mode="exec": the timed launch is `lxc start NAME && lxc exec NAME -- APP` (the app as an
  exec'd process, like `docker exec`): it includes that 1 s.

Network path (`network`, the row's `network` column says which one the traffic took):
- "proxy" (the default): LXD's proxy device (`forkproxy`, a userland proxy on the target like
  docker-proxy) listens on the target's PORT (all addresses, like `docker run -p`) and connects to
  127.0.0.1:8080 inside the container's network namespace; the container also has eth0 on the LXD
  bridge (DHCP from init, in the background), its address is in the details. forkproxy starts
  after the container is up, so the probe's lag behind the app's listening clock includes it (tens
  of ms). It runs outside the container's cgroup: the CPU limit does not cover it (nor does
  Docker's for docker-proxy).
- "forward": no proxy device. Once `lxc start` returns, the launcher waits for the container's
  bridge address and starts edgebench's own relay (tools/forward, userland like forkproxy, also
  outside the container's cgroup) on the target's PORT to that address. LXD 5.0 waits a fixed
  10 s for forkproxy to report it started and fails the start when it has not (PROXY_TOO_SLOW); a
  slow or emulated board can miss that wait. When a start fails so, the runtime starts again with
  "forward" and keeps it for the rest of the run (the details' `network_fallback` says why);
  EDGEBENCH_LXD_NETWORK=forward chooses it from the start.

Limits: config keys and raw.lxc (runtimes/lxc.py says which), read back from the app's cgroup
after start.

Batch programs (`batch_plan`): a container with the limits and no NIC, the program pushed,
started (untimed); the timed command is `lxc exec NAME -- PROGRAM ARGS`. The counting cgroup is
the container's (`lxc.payload.NAME` with LXD 5.0 / liblxc 5, `container_cgroup`); its memory.stat
also holds init's faults from the boot, read just before the exec and kept in the details.

This module holds LxdRuntime: packaging, the untimed preparation and the timed start above,
reading limits back, why a container died, clean-up, registry images and batch runs. It is one
module because a runtime is one implementation of the interface in runtimes/base.py, read method
by method against it and against the other runtimes; what LxdRuntime uses but is not the runtime
(the lxc CLI, the config keys and the service definition; the base image) is in lxc.py and
lxd_image.py.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from edgebench.apps import BuiltApp, place_forward
from edgebench.cgroups import memory_thrash, oom_reason, read_fault_counters, read_limits
from edgebench.errors import ConfigError, EdgebenchError
import edgebench.runtimes.lxc as lxc
import edgebench.runtimes.lxd_image as lxd_image
from edgebench.runtimes.base import Runtime, app_env
from edgebench.runtimes.contract import Artifact, Availability, BatchOutcome, Instance, LaunchPlan, Limits, StartFailed
from edgebench.runtimes.image_registry import push_blob
from edgebench.runtimes.lxc import APP_ROOT, BIN_DIR, RUN_KEY, SERVICE_FILE, SERVICE_LOG, WAIT_APP, Lxc
from edgebench.runtimes.lxd_image import BaseImage, ensure_image
from edgebench.runtimes.tags import LAUNCH_TAG, is_alive, kill_pid, tagged
from edgebench.scripts import shell_script

# "native" is what the experiments pass to every runtime but Docker; both mean the same here.
BUILD_MODES = ("offline", "native")
PROXY_DEVICE = "edgebench-http"
# Every address of the target, as `docker run -p PORT:8080` publishes: the probe uses 127.0.0.1,
# a load generator on the controlling machine the target's own address.
LISTEN_ADDRESS = "0.0.0.0"
# LXD 5.0 polls its proxy helper's log once a second, 10 times, for "Status: Started", then fails
# the start. The helper is the lxd binary run again (`lxd forkproxy`); on an emulated device its
# start competes with the container's app for the CPUs (node-http under TCG: 2 of 169 starts on
# debian-v2) and can miss that fixed wait. Said in the row, as what it is.
PROXY_TOO_SLOW = ("LXD waits a fixed 10 s for its proxy helper (`lxd forkproxy`) to report it started, and it "
                  "had not: the target was too slow to start it while the container started its app (an "
                  "emulated or overloaded device); LXD's limit, not the app's")
START_MODES = ("service", "exec")
NETWORK_MODES = ("proxy", "forward")
NETWORK_PATHS = {"proxy": "lxd-proxy(forkproxy)+container-loopback",
                 "forward": "edgebench-forward(userland)+lxd-bridge"}
# How long the forward launcher waits for the container's bridge address (DHCP from its init).
ADDRESS_WAIT_S = 60

_FORWARD_LAUNCH = shell_script("lxd_forward_launch.sh")


class LxdRuntime(Runtime):
    name = "lxd"
    colour = "#8c564b"
    needs = lxd_image.NEEDS
    prepare_target = staticmethod(lxd_image.prepare_target)
    leftovers = staticmethod(lxc.leftovers)
    # Measured on Debian 12 / LXD 5.0.2 / kernel 6.18 with this image: at 1 MiB the container
    # does not come up, at 2 MiB it boots but go-http is OOM-killed, at 4 MiB go-http serves
    # (node-http needs 16 MiB: OOM-killed at 8). Below 4 nothing can start.
    min_memory_mb = 4

    def __init__(self, target, run_tag: str | None = None, start_mode: str = "service", network: str = "proxy"):
        super().__init__(target, run_tag)
        if start_mode not in START_MODES:
            raise ConfigError(f"lxd start_mode {start_mode!r} unknown; use one of {', '.join(START_MODES)}")
        if network not in NETWORK_MODES:
            raise ConfigError(f"lxd network {network!r} unknown; use one of {', '.join(NETWORK_MODES)} "
                              "(EDGEBENCH_LXD_NETWORK)")
        self.start_mode = start_mode
        self.network = network
        self.network_fallback: str | None = None  # why this run left the proxy for the forward
        self._image: BaseImage | None = None
        self.lxc = Lxc(target)

    # -- availability --------------------------------------------------------------
    def availability(self) -> Availability:
        why = self.lxc.unavailable()
        if why:
            return Availability(False, why)
        if not self.target.which("debootstrap") and not self.lxc.has_base_image():
            return Availability(False, f"{self.target.name} has no edgebench LXD image and no debootstrap to "
                                "build one; `apt-get install debootstrap` (tools/lxd/setup.sh does)")
        return Availability(True)

    def describe(self) -> str:
        r = self.target.run('PATH="$PATH:/usr/sbin:/sbin:/snap/bin"; lxd --version', timeout=20, check=False)
        image = ", edgebench base image present" if self.lxc.has_base_image() else ""
        return f"LXD {r.stdout.strip()}{image}"

    # -- image and artifact -----------------------------------------------------------
    def image(self) -> BaseImage:
        """The base image, built or checked once per runtime object."""
        if self._image is None:
            self._image = ensure_image(self.target)
        return self._image

    def package(self, built: BuiltApp, build: str = "offline") -> Artifact:
        """The base image plus what each start puts in the container: a Go binary is pushed;
        node (and a tool such as sysbench) is the target's own binary, bind-mounted read-only at
        /usr/local/bin with every library the image lacks or holds in another version, and the
        script (or tools/steps) is pushed."""
        if build not in BUILD_MODES:
            raise ConfigError(f"lxd build mode {build!r} unknown; use 'offline' (a debootstrap image made "
                              "on the target; the paper's images.linuxcontainers.org images need internet)")
        app = built.app
        image = self.image()
        inner_dir = f"{APP_ROOT}/{app.name}"
        pushes: list[tuple[str, str]] = []   # (path on the target, path in the container; "/" = a directory)
        mounts: dict[str, dict] = {}
        bound = {"binary_bytes": 0, "lib_bytes": 0}
        if app.language == "go":
            dest = f"{inner_dir}/{posixpath.basename(built.remote_path)}"
            pushes.append((built.remote_path, dest))
            inner = [dest]
        elif app.language == "node":
            mounts, bound = self.lxc.bundle(self.target.which("node") or "node", f"{BIN_DIR}/node", image.rootfs_dir)
            src_dir = posixpath.dirname(built.remote_path)
            pushes.append((src_dir, f"{APP_ROOT}/"))
            inner = [f"{BIN_DIR}/node",
                     f"{APP_ROOT}/{posixpath.basename(src_dir)}/{posixpath.basename(built.remote_path)}"]
        elif app.language == "python":  # the target's interpreter; its standard library and wheels mounted
            d = built.details
            folders = (d["stdlib"], d["site"], *d.get("data", []))
            mounts, bound = self.lxc.bundle(d["python"], f"{BIN_DIR}/python3", image.rootfs_dir, folders)
            for i, folder in enumerate(folders):
                mounts[f"edgebench-dir{i}"] = {"type": "disk", "source": folder, "path": folder, "readonly": "true"}
            bound["lib_bytes"] += sum(int(line.split()[0]) for line in self.target.run(
                ["du", "-sbL", *folders]).stdout.splitlines())
            pushes.append((built.remote_path, f"{APP_ROOT}/main.py"))
            inner = [f"{BIN_DIR}/python3", f"{APP_ROOT}/main.py"]
        elif app.language == "tool" and app.is_service:  # a tool served as itself (redis-server)
            mounts, bound = self.lxc.bundle(built.remote_path, f"{BIN_DIR}/{app.entry}", image.rootfs_dir)
            inner = [f"{BIN_DIR}/{app.entry}", *built.service_args(app.container_port)]
            if built.data_dir:  # its files at the same path as on the target
                pushes.append((built.data_dir, posixpath.dirname(built.data_dir) + "/"))
        elif app.language == "tool":  # the target's binary, run through tools/steps (found on PATH)
            mounts, bound = self.lxc.bundle(built.remote_path, f"{BIN_DIR}/{app.entry}", image.rootfs_dir)
            dest = f"{inner_dir}/steps"
            pushes.append((built.argv[0], dest))
            inner = [dest]
        else:
            raise ConfigError(f"lxd: app {app.name} has language {app.language!r}; use go, node, tool or python")
        pushed_bytes = sum(int(line.split()[0]) for line in self.target.run(
            ["du", "-sbL", *[src for src, _ in pushes]]).stdout.splitlines()) if pushes else 0
        size = image.size_bytes + pushed_bytes + bound["binary_bytes"] + bound["lib_bytes"]
        return Artifact(self.name, app.name, image.alias, size, built.size_bytes, built, build="offline",
                        details={"image_alias": image.alias, "image_fingerprint": image.fingerprint,
                                 "image_bytes": image.size_bytes, "rootfs_bytes": image.rootfs_bytes,
                                 "pushes": pushes, "pushed_bytes": pushed_bytes, "inner_argv": inner,
                                 "mounts": mounts, "bound_binary_bytes": bound["binary_bytes"],
                                 "bound_lib_bytes": bound["lib_bytes"], "image_suite": image.suite,
                                 "image_mirror": image.mirror,
                                 "build_command": f"debootstrap --variant=minbase --include=busybox "
                                                  f"{image.suite} {image.mirror}; lxc image import "
                                                  f"--alias {image.alias}; app pushed at each start"})

    def scratch_storage(self) -> str:
        return f"container root filesystem ({self.lxc.root_storage()}), {self.scratch_dir()}"

    # -- names and limits -------------------------------------------------------------
    def new_name(self, app: str) -> str:
        self._seq += 1
        return lxc.container_name(f"eb-{self.run_tag}-{self.name}-{app}-{self._seq}", self.run_tag)

    @property
    def name_prefix(self) -> str:
        return re.sub(r"[^a-zA-Z0-9-]", "-", f"eb-{self.run_tag}-{self.name}-")

    def check_limits(self, app: str, limits: Limits) -> None:
        lxc.check_limits(limits, self.target.facts().get("cores"), self.target.name)
        super().check_limits(app, limits)

    def instance_config(self, app: str, limits: Limits) -> dict[str, str]:
        """The container's config keys: the run tag, and the limits in LXD's terms."""
        swap_off = limits.memory_mb is not None and not limits.swap
        return lxc.instance_config(self.run_tag, app, limits, self.target.facts().get("cgroup_version") == 2,
                                   self.lxc.swap_accounting() if swap_off else None)

    # -- containers ---------------------------------------------------------------------
    def create(self, name: str, artifact: Artifact, limits: Limits, devices: Mapping[str, dict] | None = None,
               network: bool = True) -> float:
        """Create (not start) a container from the artifact's image; returns the seconds it took."""
        devs = {**artifact.details.get("mounts", {}), **(devices or {})}
        if not network:
            devs["eth0"] = {"type": "none"}  # drops the default profile's NIC
        return self.lxc.create({"name": name, "type": "container", "profiles": ["default"],
                                "source": {"type": "image", "fingerprint": artifact.details["image_fingerprint"]},
                                "config": self.instance_config(artifact.app, limits), "devices": devs})

    # The container operations tests and tools use, on the runtime's target (see lxc.Lxc).
    def start_container(self, name: str, limits: Limits | None = None) -> None:
        self.lxc.start(name, limits)

    def delete(self, name: str) -> None:
        self.lxc.delete(name)

    def push(self, name: str, src: str | Path, dest: str, *, from_controller: bool = False,
             mode: str | None = None) -> None:
        self.lxc.push(name, src, dest, from_controller=from_controller, mode=mode)

    def pull(self, name: str, src: str, dest: str | Path, *, to_controller: bool = False) -> None:
        self.lxc.pull(name, src, dest, to_controller=to_controller)

    def container_cgroup(self, name: str) -> str:
        return self.lxc.container_cgroup(name)

    @staticmethod
    def exec_argv(name: str, argv: Sequence[str], env: Mapping[str, str] | Sequence[str] | None = None,
                  stdin: bool = False) -> list[str]:
        return lxc.exec_argv(name, argv, env, stdin)

    def _push_app(self, name: str, artifact: Artifact) -> float:
        started = time.monotonic()
        for src, dest in artifact.details["pushes"]:
            self.push(name, src, dest)
        return time.monotonic() - started

    def _prepare(self, name: str, artifact: Artifact, limits: Limits, network: bool = True) -> dict:
        """Untimed: create the container, boot it once and stop it (the first start rewrites the
        rootfs' owners for the uid map), push the app. Returns how long each step took."""
        took = {"init_s": self.create(name, artifact, limits, network=network)}
        started = time.monotonic()
        self.lxc.start(name, limits)
        self.lxc.stop(name)
        took["first_boot_s"] = time.monotonic() - started
        took["push_s"] = self._push_app(name, artifact)
        return took

    # -- services --------------------------------------------------------------------
    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        self.check_limits(artifact.app, limits)
        name = self.new_name(artifact.app)
        logs = self.logs_dir()
        self.target.run(["mkdir", "-p", logs])
        marker = f"{logs}/{name}.started"
        cport = artifact.built.app.container_port
        network = self.network
        relay = place_forward(self.target) if network == "forward" else None
        plan = LaunchPlan(self.name, artifact.app, name, [], port, detaches=False, limits=limits,
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          network_path=NETWORK_PATHS[network],
                          state={"container": name, "marker": marker, "start_mode": self.start_mode,
                                 "network": network})
        env = app_env(artifact.built, limits, cport)
        app_argv = artifact.details["inner_argv"]
        try:
            plan.state.update(self._prepare(name, artifact, limits))
            if network == "proxy":
                r = self.target.run(["lxc", "config", "device", "add", name, PROXY_DEVICE, "proxy",
                                     f"listen=tcp:{LISTEN_ADDRESS}:{port}", f"connect=tcp:127.0.0.1:{cport}",
                                     "bind=host"], check=False)
                if not r.ok:
                    raise EdgebenchError(f"adding the proxy device for port {port} to {name} failed: "
                                         f"{r.stderr.strip()[-500:]}")
            if self.start_mode == "service":
                self.lxc.write_in(name, SERVICE_FILE, lxc.service_definition(env, app_argv),
                                  staged=f"{logs}/{name}.{posixpath.basename(SERVICE_FILE)}")
                then = self.exec_argv(name, [WAIT_APP])
            else:
                then = self.exec_argv(name, app_argv, env)
        except BaseException:
            self.lxc.delete_if_ours(name, self.run_tag)
            raise
        # The clock reading after `lxc start` returns splits the launch (see the module doc).
        if network == "forward":
            plan.argv = ["sh", "-c", _FORWARD_LAUNCH, "edgebench-lxd-forward", name, marker, str(port), str(cport),
                         relay, f"{logs}/{name}.forward", str(ADDRESS_WAIT_S), *then]
        else:
            plan.argv = ["sh", "-c", 'lxc start "$1" || exit; date +%s%N >"$2"; shift 2; exec "$@"',
                         "edgebench-lxd-start", name, marker, *then]
        return plan

    def _start_on(self, artifact: Artifact, limits: Limits, port: int, timeout_s: float):
        """As every runtime starts, except that a start LXD failed because its proxy helper
        missed the fixed wait is made again through the forward, which the rest of the run keeps."""
        try:
            return super()._start_on(artifact, limits, port, timeout_s)
        except StartFailed as e:
            if self.network != "proxy" or PROXY_TOO_SLOW not in str(e):
                raise
            self.network = "forward"
            self.network_fallback = ("LXD's proxy device did not start in its fixed 10 s on this target, so "
                                     "this run reaches LXD containers through edgebench's own forward")
            return super()._start_on(artifact, limits, port, timeout_s)

    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        name = plan.state["container"]
        plan.state["launcher_pid"] = launcher_pid
        # The app can answer before `lxc start` returns (LXD's 1 s proxy poll): wait for it, so
        # that the launch's split and LXD's full view of the container are there.
        self.target.run(["sh", "-c", 'for i in $(seq 300); do [ -s "$1" ] && exit 0; sleep 0.05; done; exit 1',
                         "wait-started", plan.state["marker"]], timeout=30, check=False)
        st = self.lxc.state(name) or {}
        init_pid = st.get("pid") or None
        app_pid = self.lxc.find_pid(init_pid) if init_pid else None
        # Read from init: the limits sit on lxc.payload.NAME, where init (and the service) run;
        # on cgroup v2 an exec'd process sits one level below it (.lxc), whose own files say "max".
        applied = read_limits(self.target, init_pid or app_pid) if (app_pid or init_pid) else None
        config = (self.lxc.instance(name) or {}).get("config", {})
        marker = (self.target.read_text(plan.state["marker"], missing_ok=True) or "").strip()
        addresses = [a["address"] for a in ((st.get("network") or {}).get("eth0") or {}).get("addresses", [])
                     if a.get("family") == "inet"]
        details = {"init_pid": init_pid, "launcher_pid": launcher_pid,
                   "cgroup": self.container_cgroup(name),
                   "lxd_config": {k: v for k, v in config.items() if k.startswith(("limits.", "raw.", "user."))},
                   "container_started_unix_ns": int(marker) if marker.isdigit() else None,
                   "start_mode": plan.state.get("start_mode"),
                   **{k: plan.state.get(k) for k in ("init_s", "first_boot_s", "push_s")},
                   "bridge_ipv4": addresses[0] if addresses else None}
        if plan.state.get("network") == "forward":
            details["forward"] = (self.target.read_text(f"{self.logs_dir()}/{name}.forward", missing_ok=True)
                                  or "").strip()[-300:]
            if self.network_fallback:
                details["network_fallback"] = self.network_fallback
        return Instance(self.name, plan.app, name, plan.port, f"http://127.0.0.1:{plan.port}", app_pid,
                        plan.limits, applied, plan.network_path, plan, details=details)

    def app_output(self, instance: Instance) -> str:
        return self._app_stream(instance.plan, "out")

    def _app_stream(self, plan: LaunchPlan, which: str) -> str:
        if plan.state.get("start_mode") == "service":
            return self.lxc.read_in(plan.state["container"], f"{SERVICE_LOG}/app.{which}") or ""
        path = plan.stdout_path if which == "out" else plan.stderr_path
        return self.target.read_text(path, missing_ok=True) or "" if path else ""

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        name = plan.state.get("container")
        parts = []
        if name:
            st = self.lxc.state(name)
            oom = oom_reason(self.lxc.oom_kills(name))
            if oom:
                parts.append(oom)
            if st is None:
                parts.append("container gone")
            elif st.get("status") != "Running":
                parts.append(f"container {str(st.get('status')).lower()}")
        launcher = (self.target.read_text(plan.stderr_path, missing_ok=True) or "").strip() if plan.stderr_path else ""
        app = self._app_stream(plan, "err").strip() if plan.state.get("start_mode") == "service" else ""
        for text in (app, launcher):
            tail = text.splitlines()[-3:]
            if tail:
                parts.append(" | ".join(tail))
        # "Failed to start device ...: Please look in <log>": that log goes with the container,
        # so its words are kept here (a proxy device that failed once on debian-v2 left none).
        named = re.search(r"Please look in (/\S+\.log)", launcher)
        if named:
            text = self.target.read_text(named.group(1), missing_ok=True)
            words = " | ".join(text.strip().splitlines()[-3:]) or "empty" if text is not None else "gone already"
            parts.append(f"{posixpath.basename(named.group(1))}: {words}")
            if text is not None and "Status: Started" not in text and "Error:" not in text:
                parts.append(PROXY_TOO_SLOW)
        return "; ".join(parts) or None

    def memory_thrash(self, plan: LaunchPlan) -> str | None:
        st = self.lxc.state(plan.state["container"]) if plan.state.get("container") else None
        return memory_thrash(self.target, pid=st["pid"]) if st and st.get("pid") else None

    def died(self, plan: LaunchPlan) -> str | None:
        st = self.lxc.state(plan.state["container"])
        if st is None or st.get("status") != "Running":
            return self.failure_reason(plan)
        return None

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        name = plan.state.get("container")
        if name:
            self.delete(name)
        launcher = plan.state.pop("launcher_pid", None)
        if launcher and is_alive(self.target, launcher):
            kill_pid(self.target, launcher)  # `lxc exec` ends with its container; this is a backstop
        if name and plan.state.get("network") == "forward":
            for pid, _ in tagged(self.target, f"{LAUNCH_TAG}={name}"):
                kill_pid(self.target, pid)
        if plan.state.get("marker"):
            self.target.run(["rm", "-f", plan.state["marker"]], check=False)

    def tagged(self) -> list[str]:
        """Containers on the target that belong to this run (by config key or name)."""
        return [i["name"] for i in self.lxc.instances() if (i.get("config") or {}).get(RUN_KEY) == self.run_tag
                or i.get("name", "").startswith(self.name_prefix)]

    def cleanup(self) -> None:
        try:
            super().cleanup()
        finally:
            # Anything of this run that a crash kept from the bookkeeping.
            for name in self.tagged():
                self.delete(name)

    # -- first starts: the base image fetched from the run's registry and imported --------
    no_image_fetch = ""
    BLOB_REPOSITORY = "edgebench/lxd-base"

    def publish_image(self, artifact: Artifact, registry) -> Artifact:
        """The base image's two import tarballs (the cache's metadata.tar and rootfs.tar) as blobs
        of the registry; every app shares them (its own files are pushed at each start)."""
        cache = self.image().cache_dir
        blobs = [push_blob(registry, self.BLOB_REPOSITORY, f"{cache}/{part}")
                 for part in ("metadata.tar", "rootfs.tar")]
        return replace(artifact, details={**artifact.details, "registry": registry.name, "ca": registry.ca_path,
                                          "blobs": blobs})

    def drop_image(self, artifact: Artifact) -> None:
        # Containers made from it keep their own root filesystems; the next fetch imports it again
        # (and any later use of the runtime re-imports it from the cache, should a run stop between).
        fingerprint = artifact.details["image_fingerprint"]
        self.target.run(["lxc", "image", "delete", fingerprint], timeout=120, check=False)
        if lxd_image.lxc_query(self.target, f"/1.0/images/{fingerprint}") is not None:
            raise EdgebenchError(f"LXD image {fingerprint[:12]} is still on {self.target.name} after lxc image delete")

    def fetch_image(self, artifact: Artifact) -> dict:
        """The tarballs fetched from the registry (curl over HTTPS) and `lxc image import`ed under
        the base image's alias, the two timed apart on the device."""
        d = artifact.details
        scratch = f"{self.target.workspace}/first-start-lxd"
        argv = ["sh", "-c", _FETCH_IMPORT, "fetch-import", scratch, d["ca"], d["image_alias"],
                *[b["url"] for b in d["blobs"]]]
        r = self.target.run(argv, timeout=lxd_image.IMPORT_TIMEOUT_S, check=False)
        fields = (r.stdout.strip().splitlines() or [""])[-1].split()
        imported = lxd_image.lxc_query(self.target, f"/1.0/images/{d['image_fingerprint']}") or {}
        fingerprint = imported.get("fingerprint")
        if len(fields) != 5 or fields[0] != "edgebench-import" or fingerprint != d["image_fingerprint"]:
            self._image = None
            self.image()  # the base image back from the cache: the run's other starts need it
            step = {2: "transfer", 3: "lxc image import"}.get(r.exit_code, "fetch")
            raise EdgebenchError(f"the base image's {step} on {self.target.name} failed: "
                                 f"{(r.stderr or r.stdout).strip()[-400:] or 'its fingerprint differs'}")
        t0, t1, t2, size = map(int, fields[1:])
        command = f"curl {len(d['blobs'])} blobs from {d['registry']}; lxc image import --alias {d['image_alias']}"
        return {"fetch_ms": (t2 - t0) / 1e6, "layers_fetched": len(d["blobs"]), "layers_present": 0,
                "command": command, "output": r.stdout + r.stderr,
                # The fetch is its two parts in sequence: no separate measurement after the start.
                "parts": {"transfer_ms": (t1 - t0) / 1e6, "unpack_ms": (t2 - t1) / 1e6, "compressed_bytes": size,
                          "command": command, "output": r.stdout + r.stderr}}

    # -- batch -----------------------------------------------------------------------
    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        """Untimed: a container with the limits and no network, the program pushed in, started
        (init only); argv is the `lxc exec` that runs the program to completion. Its cgroup is
        the container's: it holds init (a shell asleep) besides the program, so the memory.stat
        fault counts read before the exec are kept in the details to subtract."""
        name = self.new_name(artifact.app)
        logs = self.logs_dir()
        self.target.run(["mkdir", "-p", logs])
        plan = LaunchPlan(self.name, artifact.app, name, [], 0, limits=limits, network_path="none",
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          state={"container": name})
        try:
            plan.state["init_s"] = self.create(name, artifact, limits, network=False)
            plan.state["push_s"] = self._push_app(name, artifact)
            started = time.monotonic()
            self.lxc.start(name, limits)  # the first start, with the rootfs' uid shift: untimed
            plan.state["start_s"] = time.monotonic() - started
            cgroup = self.container_cgroup(name)
            plan.counting_cgroup = cgroup
            plan.state["cgroup"] = cgroup
            plan.faults_before_exec = read_fault_counters(self.target, cgroup, settle=False)
        except BaseException:
            self.lxc.delete_if_ours(name, self.run_tag)
            raise
        env = app_env(artifact.built, limits)
        plan.argv = self.exec_argv(name, [*artifact.details["inner_argv"], *args], env)
        return plan

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        name = plan.state["container"]
        st = self.lxc.state(name) or {}
        pid = st.get("pid")
        applied = read_limits(self.target, pid) if pid else None
        before = plan.faults_before_exec
        return BatchOutcome(applied, oom_killed=bool(applied.oom_kills) if applied else None, details={
            "container": name, "cgroup": plan.state.get("cgroup"),
            "cgroup_faults_before_exec": ({"pgfault": before.pgfault, "pgmajfault": before.pgmajfault}
                                          if before else None),
            "init_s": plan.state.get("init_s"), "push_s": plan.state.get("push_s"),
            "start_s": plan.state.get("start_s")})


_FETCH_IMPORT = shell_script("lxd_fetch_import.sh")

__all__ = ["LxdRuntime", "NETWORK_MODES", "NETWORK_PATHS", "START_MODES"]
