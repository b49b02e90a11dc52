"""The Nanos unikernel, driven with the `ops` CLI on the target, on QEMU.

- package (untimed): `ops build` of the app's static binary with a configuration derived from
  `nanos-configs/<app>.json`, into an image under ops' home (`$OPS_HOME/.ops/images`, or
  `~/.ops/images`). Its size is recorded apparent and allocated, and the kernel's beside it.
- start: `ops run -s` (skip the build) on that image, with the requested vCPUs and memory
  written into a per-start configuration and the port forwarded on the command line as
  HOST-GUEST and dropped from the configuration (each start has its own host port, and a port
  in both places is forwarded twice or fails; the guest port is baked into the image's
  environment). ops runs QEMU in the foreground with the
  serial console on its stdout, which is where the app's own output lands.
- stop: QEMU itself. ops starts it in a process group of its own, and a SIGKILL to ops leaves
  it running, so each launch carries a tag in its environment (QEMU inherits ops' environment)
  by which its QEMU is found and killed, even after ops is gone.
- what ran: vCPUs, memory, network and accelerator are read back from QEMU's command line,
  and the accelerator from QEMU's open files (a KVM VM holds an `anon_inode:kvm-vm`): ops
  asks for `accel=kvm:tcg`, and QEMU falls back to TCG without saying so.

The guest's clock is not the target's (QEMU's RTC gives it whole seconds at boot), so the
app's own 'listening' reading is not used: a service's console is stamped on the host's clock as
its lines arrive (`probe -stamp`, as for the other VMs), and its listening line's arrival and
Nanos' first line are the events boot time reads.

This module holds NanosRuntime; the ops CLI's configurations, command lines and output are in
runtimes/ops.py, and everything read from QEMU (any VM runtime's) in runtimes/qemu.py.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import replace

from edgebench.apps import BuiltApp, place_probe
from edgebench.cgroups import taskset
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.provisioning.needs import TargetNeeds
import edgebench.runtimes.qemu as qemu
from edgebench.runtimes.contract import Artifact, Availability, Instance, LaunchPlan, Limits
from edgebench.runtimes.ops import (ACCEL_MODES, BUILD_TIMEOUT_S, FIND_OPS, OPS_HOME, image_config, load_base_config,
                                    ops_build_argv, ops_notes, ops_run_argv, parse_ops_version, run_config)
from edgebench.runtimes.ops import INSTALL_BY_HAND as OPS_BY_HAND
from edgebench.runtimes.ops import VERSION as OPS_VERSION
from edgebench.runtimes.ops import install as ops_install
from edgebench.runtimes.qemu import qemu_needs
from edgebench.runtimes.tags import LAUNCH_TAG, tagged
from edgebench.runtimes.vm import StampedConsoleVm, VmRuntime, stamped_console
from edgebench.targets import sh

# ops' last line before it runs QEMU ("booting /root/.ops/images/NAME ..."), and Nanos' own lines,
# each with its uptime ("[0.745204] en1: assigned 10.0.2.15").
OPS_BOOTING = "booting "
# Arguments replaced where Nanos' single process needs it (app -> {argument: replacement}).
SINGLE_PROCESS = {"nginx": {"daemon off;": "daemon off; master_process off;"}}
NANOS_LINE = re.compile(r"\[\s*\d+\.\d+\] ")


class NanosRuntime(VmRuntime):
    name = "nanos"
    colour = "#9467bd"
    # Nanos and a Go runtime boot in far less; below this QEMU/ops are not worth starting.
    min_memory_mb = 32
    batch_faults_scope = "host side: ops and QEMU running the VM (the guest's own faults are not the host's)"
    batch_rusage_missing = "Nanos' getrusage reported 0 page faults and 0 max RSS: it does not count them"
    languages = ("go", "node", "tool")

    prepare_target = staticmethod(ops_install)

    @classmethod
    def runs(cls, app) -> bool:
        """Go and Node apps, and Debian's tools that serve (nginx, Redis) as ELF programs with the
        libraries they link: a batch tool's phases run through tools/steps, a shell script."""
        return app.language in ("go", "node") or (app.language == "tool" and app.is_service)

    @classmethod
    def runs_what(cls) -> str:
        return "Go and Node apps, and Debian's tools that serve, such as nginx and Redis"

    @classmethod
    def target_needs(cls, arch: str) -> TargetNeeds:
        qemu = qemu_needs(arch, "nanos runtime")
        return replace(qemu, versions=(*qemu.versions, OPS_VERSION), by_hand=(*qemu.by_hand, OPS_BY_HAND))

    def __init__(self, target, run_tag=None, accel: str = "auto", require_kvm: bool = False):
        super().__init__(target, run_tag)
        if accel not in ACCEL_MODES:
            raise ConfigError(f"nanos accel={accel!r} unknown; choose from {', '.join(ACCEL_MODES)}")
        self.accel = "kvm" if require_kvm else accel
        self.require_kvm = require_kvm
        self._images: set[str] = set()

    # -- the target's ops ---------------------------------------------------------------
    def ops(self) -> str | None:
        """ops on PATH, or where its installer puts it (ops' home's bin/)."""
        if "_ops" not in self.__dict__:
            r = self.target.run(["sh", "-c", FIND_OPS], check=False)
            self._ops = r.stdout.strip().splitlines()[0] if r.ok and r.stdout.strip() else None
        return self._ops

    def ops_home(self) -> str:
        """Where ops keeps images and kernels: $OPS_HOME/.ops when set, else ~/.ops."""
        if "_ops_home" not in self.__dict__:
            self._ops_home = self.target.run(["sh", "-c", OPS_HOME]).stdout.split()[0]
        return self._ops_home

    def versions(self) -> dict:
        """ops' and the local Nanos kernel's versions, and where the kernel is. Offline, every
        ops call says 'version lookup failed, using local': kept as a note, not an error."""
        if "_versions" not in self.__dict__:
            ops = self.ops()
            r = self.target.run([ops, "version"], timeout=60, check=False) if ops else None
            info = parse_ops_version(r.stdout) if r and r.ok else {}
            local = self.target.read_text(f"{self.ops_home()}/latest.txt", missing_ok=True)
            info["local_release"] = (local or "").strip() or None
            kernel = f"{self.ops_home()}/{info['local_release']}/kernel.img" if info["local_release"] else None
            size = self.target.run(["stat", "-L", "-c", "%s", kernel], check=False) if kernel else None
            info["kernel"] = kernel if size and size.ok else None
            info["kernel_bytes"] = int(size.stdout.strip()) if size and size.ok else None
            info["notes"] = ops_notes((r.stdout + r.stderr) if r else "")
            self._versions = info
        return self._versions

    def qemu_binary(self) -> str:
        return qemu.qemu_binary(self._arch())

    def availability(self) -> Availability:
        if not self.ops():
            return Availability(False, f"no ops on {self.target.name}; install it (curl https://ops.city/get.sh "
                                "-sSfL | sh, which needs internet) or build it from github.com/nanovms/ops")
        if not self.target.which(self.qemu_binary()):
            system = qemu.qemu_system(self._arch())
            return Availability(False, f"no {self.qemu_binary()} on {self.target.name}; install QEMU there "
                                f"(apt-get install {system[1] if system else 'qemu-system-x86 or qemu-system-arm'})")
        info = self.versions()
        if not info.get("kernel"):
            return Availability(False, f"ops on {self.target.name} has no local Nanos kernel under "
                                f"{self.ops_home()} (latest.txt: {info.get('local_release')}); run `ops update` "
                                "with internet, or build nanovms/nanos and install its kernel.img there")
        if self.accel == "kvm":
            why = self.kvm_unusable()
            if why:
                return Availability(False, f"KVM is required (require_kvm=True) but {why}; run on a host "
                                    "where Nanos gets KVM, or allow software emulation (TCG)")
        return self.inside_emulation() or Availability(True)

    def describe(self) -> str:
        v, no_kvm = self.versions(), self.kvm_unusable()
        return (f"ops {v.get('ops')}, Nanos {v.get('nanos') or v.get('local_release')}; "
                f"{'VMs run under TCG: ' + no_kvm if no_kvm else 'kvm: yes'}")

    def kvm_unusable(self) -> str | None:
        """Why ops would not give QEMU KVM here, or None. ops asks for KVM only when it can open
        /dev/kvm and /proc/cpuinfo shows vmx or svm; otherwise it runs TCG without saying so."""
        return qemu.kvm_unusable(self.target)

    # -- images --------------------------------------------------------------------
    def image_path(self, image_name: str) -> str:
        return f"{self.ops_home()}/images/{image_name}"

    def _workdir(self, app: str) -> str:
        return f"{self.target.workspace}/nanos/{app}"

    def _program(self, built: BuiltApp, workdir: str) -> tuple[str, list[str], list[str], str]:
        """(program, args, files, how) for ops: the static binary for Go; for Node the target's
        node binary (ops adds the libraries it links) with the script as its argument."""
        language = built.app.language
        if language == "go":
            program = f"{workdir}/{built.app.name}"
            self.target.run(["cp", built.remote_path, program])
            return program, [], [], "static Go binary"
        if language == "node":
            node = self.target.which("node")
            if not node:
                raise ConfigError(f"{self.target.name} has no `node` to put in a Nanos image; install Node.js")
            self.target.run(["cp", built.remote_path, f"{workdir}/{built.app.entry}"])
            return node, [built.app.entry], [built.app.entry], (
                f"local node binary ({node}) with the libraries it links, script as its argument "
                "(no ops package: those need internet)")
        if language == "tool" and built.app.is_service:
            program = f"{workdir}/{built.app.entry}"
            self.target.run(["cp", built.remote_path, program])
            return program, self.service_args(built), [], (
                f"Debian's {built.app.entry} ({built.remote_path}) with the libraries it links")
        raise ConfigError(f"{built.app.name} ({language}) cannot run on Nanos in edgebench; "
                          "leave it out of the nanos runs")

    @staticmethod
    def service_args(built: BuiltApp) -> list[str]:
        """A tool's arguments as a service on its guest port. Nanos runs one process (no fork):
        nginx serves from its master process, as Unikraft's does."""
        args = built.service_args(built.app.container_port)
        return [SINGLE_PROCESS.get(built.app.name, {}).get(a, a) for a in args]

    def image_files(self, built: BuiltApp, workdir: str) -> dict[str, str]:
        """MapDirs for a tool that serves: its data files at the path its arguments name, as in
        every runtime, and the /etc and /tmp a Debian program expects (nginx resolves its user's
        group, writes its pid file to /tmp)."""
        if built.app.language != "tool":
            return {}
        etc, tmp = f"{workdir}/etc", f"{workdir}/tmp"
        self.target.run(["mkdir", "-p", etc, tmp])
        self.target.write_text(f"{etc}/passwd", "root:x:0:0:root:/root:/bin/sh\n")
        self.target.write_text(f"{etc}/group", "root:x:0:\n")
        self.target.write_text(f"{tmp}/.keep", "")
        dirs = {f"{etc}/*": "/etc", f"{tmp}/*": "/tmp"}
        if built.data_dir:
            dirs[f"{built.data_dir}/*"] = built.data_dir
        return dirs

    def build_image(self, built: BuiltApp, image_name: str, args: list[str] | None = None,
                    skip_if_present: bool = False) -> dict:
        """`ops build` into ops' images directory; returns what was built and how."""
        workdir = self._workdir(built.app.name)
        self.target.run(["mkdir", "-p", workdir])
        program, base_args, files, how = self._program(built, workdir)
        guest_port = built.app.container_port if built.app.is_service else None  # any service: the host forwards to it
        config = image_config(load_base_config(built.app.name), guest_port,
                              args=[*base_args, *(args or [])], files=files)
        if mapped := self.image_files(built, workdir):
            config["MapDirs"] = mapped
        config_path = f"{workdir}/{image_name}.json"
        self.target.write_text(config_path, json.dumps(config, indent=2) + "\n")
        if skip_if_present and self.target.run(["test", "-s", self.image_path(image_name)], check=False).ok:
            return {"program": program, "config": config, "config_path": config_path, "program_mode": how}
        cmd = ops_build_argv(self.ops(), program, config_path, image_name)
        r = self.target.run(f"cd {shlex.quote(workdir)} && {sh(cmd)}", timeout=BUILD_TIMEOUT_S, check=False)
        if not r.ok or not self.target.run(["test", "-s", self.image_path(image_name)], check=False).ok:
            raise EdgebenchError(f"ops build of {image_name} on {self.target.name} failed (exit {r.exit_code}):\n"
                                 f"{(r.stdout + r.stderr)[-1500:]}")
        self._images.add(image_name)
        return {"program": program, "config": config, "config_path": config_path, "program_mode": how,
                "build_command": sh(cmd), "ops_output": (r.stdout + r.stderr)[-2000:],
                "ops_notes": ops_notes(r.stdout + r.stderr)}

    def file_sizes(self, path: str) -> tuple[int, int]:
        """(apparent, allocated) bytes: a raw disk image is sparse."""
        apparent, blocks, block_size = self.target.run(["stat", "-c", "%s %b %B", path]).stdout.split()
        return int(apparent), int(blocks) * int(block_size)

    def package(self, built: BuiltApp, build: str = "native") -> Artifact:
        image_name = f"edgebench-{built.app.name}"
        details = self.build_image(built, image_name)
        apparent, allocated = self.file_sizes(self.image_path(image_name))
        info = self.versions()
        details.update(image=self.image_path(image_name), image_name=image_name, image_apparent_bytes=apparent,
                       image_allocated_bytes=allocated, kernel=info.get("kernel"),
                       kernel_bytes=info.get("kernel_bytes"), ops_version=info.get("ops"),
                       nanos_version=info.get("nanos") or info.get("local_release"))
        # The image as stored on the device: the blocks it occupies (it is sparse).
        # `build` names how the program got into the image, so every row says it.
        build = "ops" if built.app.language == "go" else f"ops+{built.app.language}-binary"
        return Artifact(self.name, built.app.name, self.image_path(image_name), allocated, built.size_bytes,
                        built, build=build, details=details,
                        extra_sizes=[("image_size_apparent", apparent, "bytes", self.image_path(image_name)),
                                     ("kernel_size", info.get("kernel_bytes"), "bytes", info.get("kernel"))])

    # -- starting and stopping -------------------------------------------------------
    def _plan(self, artifact: Artifact, limits: Limits, port: int | None, skip_build: bool = True,
              image_name: str | None = None, program: str | None = None) -> LaunchPlan:
        self.check_limits(artifact.app, limits)
        name = self.new_name(artifact.app)
        logs = self.logs_dir()
        self.target.run(["mkdir", "-p", logs])
        image_name = image_name or artifact.details["image_name"]
        config_path = f"{logs}/{name}.ops.json"
        self.target.write_text(config_path, json.dumps(run_config(artifact.details["config"], limits), indent=2))
        guest = artifact.built.app.container_port if port is not None else None
        ops_argv = ops_run_argv(self.ops(), program or artifact.details["program"], image_name, config_path,
                                port, guest, self.accel, skip_build=skip_build)
        tag = f"{LAUNCH_TAG}={name}"
        state = {"tag": tag, "config_path": config_path, "program_mode": artifact.details.get("program_mode")}
        if port is not None:
            # A service's console (ops' lines, then Nanos' and the app's) stamped on the host's clock
            # as it arrives, for its boot phases; a batch run keeps ops' own exit status.
            state["console_stamps"] = f"{logs}/{name}.console"
            ops_argv = [*stamped_console(state["console_stamps"], place_probe(self.target)), *ops_argv]
        # Pinning ops pins every QEMU thread it starts (vCPUs, I/O, the user-mode network), which
        # are all outside the VM's limits, to the granted cores.
        argv = ["env", tag, *taskset(limits.cpuset), *ops_argv]
        workdir = self._workdir(artifact.app)
        if not skip_build:
            argv = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "in-workdir", workdir, *argv]
        network = "none" if port is None else f"qemu user-mode (slirp) hostfwd tcp::{port}-:{guest}"
        return LaunchPlan(self.name, artifact.app, name, argv, port or 0, limits=limits,
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          network_path=network, state=state)

    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        return self._plan(artifact, limits, port)

    def published_launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        """The artifact's `ops run` with its image build inside the timed span, into an image of
        its own so that the prepared one stays as it was."""
        plan = self._plan(artifact, limits, port, skip_build=False,
                          image_name=f"{artifact.details['image_name']}-published")
        self._images.add(f"{artifact.details['image_name']}-published")
        return plan

    # A service's listening line is timed where it reaches the host, never by the guest's clock.
    foreign_clock = None
    listen_unix_ns = StampedConsoleVm.listen_unix_ns

    def boot_phases(self, instance: Instance) -> dict[str, int]:
        """On the host's clock: Nanos' first line (its kernel is up and has brought its network up:
        `[0.745204] en1: assigned 10.0.2.15`). ops' own lines come before it; QEMU's firmware prints
        nothing on the console ops gives it, and Nanos prints nothing when it starts the program."""
        lines = self.console_lines(instance.plan)
        booting = next((i for i, (_, line) in enumerate(lines) if line.startswith(OPS_BOOTING)), None)
        if booting is None:
            return {}
        first = next((ns for ns, line in lines[booting + 1:] if NANOS_LINE.match(line)), None)
        return {"kernel_first_output": first} if first else {}

    def tagged(self, tag: str, prefix: bool = False) -> list[tuple[int, str]]:
        """[(pid, comm)] of live processes carrying this launch's tag (ops and its QEMU), or with
        prefix=True any tag that starts with `tag`."""
        return tagged(self.target, tag, prefix)

    def attach_details(self, plan: LaunchPlan) -> dict:
        output = "".join(self.target.read_text(p, missing_ok=True) or "" for p in (plan.stdout_path,
                                                                                   plan.stderr_path))
        return {"program_mode": plan.state.get("program_mode"), "ops_notes": ops_notes(output)}

    def versions_brief(self) -> dict:
        v = self.versions()
        return {"ops_version": v.get("ops"), "nanos_version": v.get("nanos") or v.get("local_release")}

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        out = (self.target.read_text(plan.stdout_path, missing_ok=True) or "")
        err = (self.target.read_text(plan.stderr_path, missing_ok=True) or "")
        lines = [x.strip() for x in (out + "\n" + err).splitlines() if x.strip()]
        useful = [x for x in lines if not x.startswith(("running local instance", "booting "))]
        return " | ".join(useful[-3:]) or None

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        super().stop_plan(plan, pid)
        config = plan.state.pop("config_path", None)
        if config:
            self.target.run(["rm", "-f", config], check=False)

    def cleanup(self) -> None:
        super().cleanup()
        for image in sorted(self._images):
            if image.startswith("edgebench-batch-") or image.endswith("-published"):
                self.target.run(["rm", "-f", self.image_path(image)], check=False)
        self._images.clear()

    # -- batch -------------------------------------------------------------------------
    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        # Arguments live in the image's manifest: one image per argument list, built untimed
        # and reused by every repetition.
        digest = hashlib.sha256(json.dumps([artifact.app, args]).encode()).hexdigest()[:12]
        image_name = f"edgebench-batch-{artifact.app}-{digest}"
        details = self.build_image(artifact.built, image_name, args=args,
                                   skip_if_present=image_name in self._images)
        self._images.add(image_name)
        batch_artifact = Artifact(self.name, artifact.app, self.image_path(image_name), artifact.size_bytes,
                                  artifact.raw_size_bytes, artifact.built, artifact.build,
                                  details=dict(artifact.details, **details, image_name=image_name))
        plan = self._plan(batch_artifact, limits, None)
        self.watch_batch(plan)
        return plan

