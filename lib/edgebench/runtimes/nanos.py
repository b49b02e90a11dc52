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
app's own 'listening' reading is not used: time to listen and probe lag are missing for Nanos.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shlex
import time
from dataclasses import dataclass, replace

from edgebench.apps import BuiltApp
from edgebench.cgroups import AppliedLimits
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.paths import NANOS_CONFIGS_DIR
from edgebench.runtimes.base import (Artifact, Availability, BatchOutcome, Instance, LaunchPlan, Limits, Runtime, StartFailed,
                                     is_alive, kill_pid)
from edgebench.targets import sh

ACCEL_MODES = ("auto", "kvm", "tcg")
VM_TAG = "EDGEBENCH_VM"          # environment variable that marks a launch's ops and QEMU
BUILD_TIMEOUT_S = 300
KVM_FD = "anon_inode:kvm-vm"


# -- pure parts: configuration, command lines, what QEMU was started with ------------------
def load_base_config(app: str) -> dict:
    path = NANOS_CONFIGS_DIR / f"{app}.json"
    if not path.exists():
        raise ConfigError(f"no ops configuration for {app}: add nanos-configs/{app}.json")
    return json.loads(path.read_text())


def image_config(base: dict, guest_port: int | None, args: list[str] | None = None,
                 files: list[str] | None = None) -> dict:
    """What the image is built with: the published configuration without its ports (they are
    given per start on the command line) and with the app's port in its environment."""
    config = json.loads(json.dumps(base))
    run = config.setdefault("RunConfig", {})
    run.pop("Ports", None)
    env = config.setdefault("Env", {})
    if guest_port is not None:
        env["PORT"] = str(guest_port)
    if args is not None:
        config["Args"] = list(args)
    if files:
        config["Files"] = list(files)
    return config


def vcpus_for(cpus: float | None) -> int:
    """Whole vCPUs: a VM cannot have half a CPU. Go's default GOMAXPROCS is then this number,
    which is what the fair protocol asks for."""
    return max(1, math.ceil(cpus)) if cpus else 1


def run_config(image: dict, limits: Limits) -> dict:
    """The per-start configuration: the image's, with the requested vCPUs and memory."""
    config = json.loads(json.dumps(image))
    run = config.setdefault("RunConfig", {})
    run.pop("Ports", None)
    run["CPUs"] = vcpus_for(limits.cpus)
    if limits.memory_mb is not None:
        run["Memory"] = f"{int(limits.memory_mb)}M"
    return config


def ops_run_argv(ops: str, program: str, image_name: str, config_path: str, host_port: int | None,
                 guest_port: int | None, accel: str, skip_build: bool = True) -> list[str]:
    argv = [ops, "run", program, "-c", config_path, "-i", image_name]
    if skip_build:
        argv.append("-s")
    if host_port is not None and guest_port is not None:
        argv += ["-p", f"{host_port}-{guest_port}"]
    if accel == "tcg":
        argv.append("--accel=false")
    return argv


@dataclass
class QemuLaunch:
    """What a QEMU command line asks for."""
    vcpus: int
    memory_mb: float | None
    accel_requested: tuple[str, ...]     # in QEMU's order of preference; () = QEMU's default (tcg)
    network: str
    image: str | None


def _option_values(argv: list[str], *names: str) -> list[str]:
    out = []
    for i, a in enumerate(argv):
        for n in names:
            if a == n and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif a.startswith(n + "="):
                out.append(a[len(n) + 1:])
    return out


def _qemu_size_mb(text: str) -> float | None:
    text = text.split(",")[0].removeprefix("size=").strip()
    units = {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024, "K": 1 / 1024}
    num = text.rstrip("KMGTkmgtBb")
    suffix = text[len(num):].upper().rstrip("B")
    try:
        return float(num) * units[suffix]
    except (ValueError, KeyError):
        return None


def parse_qemu_argv(argv: list[str]) -> QemuLaunch:
    smp = _option_values(argv, "-smp")
    vcpus = 1
    if smp:
        first = smp[-1].split(",")[0]
        fields = dict(f.split("=", 1) for f in smp[-1].split(",") if "=" in f)
        vcpus = int(fields.get("cpus") or (first if "=" not in first else 1))
    mem = _option_values(argv, "-m")
    accel: list[str] = []
    if "-enable-kvm" in argv or "--enable-kvm" in argv:
        accel = ["kvm"]
    for value in _option_values(argv, "-machine", "-M"):
        for f in value.split(","):
            if f.startswith("accel="):
                accel = f[len("accel="):].split(":")
    for value in _option_values(argv, "-accel", "--accel"):
        accel = [value.split(",")[0]]
    netdevs = _option_values(argv, "-netdev")
    network = "none"
    if netdevs:
        kind, *opts = netdevs[0].split(",")
        if kind == "user":
            fwd = [o.removeprefix("hostfwd=") for o in opts if o.startswith("hostfwd=")]
            network = "qemu user-mode (slirp)" + (f", hostfwd {' '.join(fwd)}" if fwd else "")
        elif kind == "tap":
            ifname = next((o.split("=", 1)[1] for o in opts if o.startswith("ifname=")), "?")
            network = f"tap {ifname}"
        else:
            network = kind
    drive = next((f.split("=", 1)[1] for d in _option_values(argv, "-drive") for f in d.split(",")
                  if f.startswith("file=")), None)
    return QemuLaunch(vcpus, _qemu_size_mb(mem[-1]) if mem else 128.0, tuple(accel), network, drive)


def accelerator(requested: tuple[str, ...], fd_links: list[str] | None) -> tuple[str, str]:
    """(accelerator, evidence). The open files decide when they can be read; the command line
    only when it leaves no choice."""
    if fd_links is not None:
        if any(KVM_FD in link for link in fd_links):
            return "kvm", f"QEMU holds {KVM_FD}"
        if "kvm" in requested and "tcg" not in requested:
            return "unknown", "asked for KVM only, but QEMU holds no KVM VM"
        return "tcg", ("QEMU holds no KVM VM (fell back from " + ":".join(requested) + ")"
                       if "kvm" in requested else "no accelerator asked for: QEMU's default, TCG")
    if not requested or requested == ("tcg",):
        return "tcg", "command line: " + (":".join(requested) or "no accelerator (TCG)")
    if requested == ("kvm",):
        return "kvm", "command line: kvm only"
    return "unknown", "command line allows " + ":".join(requested) + "; QEMU's files unreadable"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def plain(text: str) -> str:
    """ops colours its warnings; rows and notes keep the words."""
    return _ANSI.sub("", text)


def parse_ops_version(text: str) -> dict:
    out = {}
    for line in plain(text).splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key.startswith("ops version"):
            out["ops"] = value.strip()
        elif key.startswith("nanos version"):
            out["nanos"] = value.strip()
    return out


def ops_notes(output: str) -> list[str]:
    """ops' warnings worth keeping with a row (offline version lookup, acceleration)."""
    keep = ("version lookup failed", "acceleration", "kvm", "Port ", "error", "Error")
    return sorted({line.strip() for line in plain(output).splitlines()
                   if any(k in line for k in keep) and len(line) < 300})[:8]


# Finds the processes a launch started by its tag: ops, and QEMU in its own process group.
# $2 = prefix: every tag that starts with $1 (a whole run's launches).
_FIND_TAGGED = r"""
tag=$1; match=-qxF; [ "$2" = prefix ] && { match=-q; tag="^$tag"; }
for e in /proc/[0-9]*/environ; do
  p=${e#/proc/}; p=${p%/environ}
  tr '\0' '\n' <"$e" 2>/dev/null | grep $match -- "$tag" || continue
  s=$(awk '/^State:/{print $2}' /proc/$p/status 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] || continue
  echo "$p $(cat /proc/$p/comm 2>/dev/null)"
done
"""

# QEMU's command line (NUL-separated, printed one per line), open files and thread affinity.
_QEMU_STATE = r"""
p=$1
echo "== cmdline"; tr '\0' '\n' </proc/$p/cmdline
echo "== fds"; for f in /proc/$p/fd/*; do readlink "$f"; done 2>/dev/null
echo "== affinity"; for t in /proc/$p/task/*; do awk '/^Cpus_allowed_list/{print $2}' $t/status; done 2>/dev/null | sort -u
"""


# Runs a batch launch ("$@") and, beside it, saves QEMU's state once QEMU appears: a batch VM
# may exit before anyone could ask. The watcher does not carry the tag, so it never finds itself.
_WATCH_QEMU = r"""
tag=$1; out=$2; shift 2
(
  while :; do
    for e in /proc/[0-9]*/environ; do
      p=${e#/proc/}; p=${p%/environ}
      case "$(cat /proc/$p/comm 2>/dev/null)" in qemu*) ;; *) continue ;; esac
      tr '\0' '\n' <"$e" 2>/dev/null | grep -qx "$tag" || continue
      sh -c "$QEMU_STATE" qemu-state "$p" >"$out.tmp" 2>/dev/null && mv "$out.tmp" "$out"; exit 0
    done
    kill -0 $$ 2>/dev/null || exit 0
    sleep 0.02
  done
) </dev/null >/dev/null 2>&1 &
exec "$@"
"""


def parse_qemu_state(text: str) -> tuple[list[str], list[str] | None, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = line[3:].strip()
            sections[current] = []
        elif current:
            sections[current].append(line)
    fds = sections.get("fds")
    return sections.get("cmdline", []), (fds if fds else None), sections.get("affinity", [])


class NanosRuntime(Runtime):
    name = "nanos"
    colour = "#9467bd"
    # Nanos and a Go runtime boot in far less; below this QEMU/ops are not worth starting.
    min_memory_mb = 32
    languages = ("go", "node")
    foreign_clock = ("the app's clock is the VM's, set from the emulated RTC at boot (whole seconds), not the "
                     "target's")

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
            r = self.target.run(["sh", "-c", 'command -v ops && exit 0; for d in "${OPS_HOME:+$OPS_HOME/.ops}" '
                                 '"$HOME/.ops"; do [ -n "$d" ] && [ -x "$d/bin/ops" ] && '
                                 '{ echo "$d/bin/ops"; exit 0; }; done; exit 1'], check=False)
            self._ops = r.stdout.strip().splitlines()[0] if r.ok and r.stdout.strip() else None
        return self._ops

    def ops_home(self) -> str:
        """Where ops keeps images and kernels: $OPS_HOME/.ops when set, else ~/.ops."""
        if "_ops_home" not in self.__dict__:
            self._ops_home = self.target.run(["sh", "-c", 'echo "${OPS_HOME:+$OPS_HOME/.ops}"; echo "$HOME/.ops"']
                                             ).stdout.split()[0]
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
        arch = self.target.facts().get("arch") or "x86_64"
        return {"aarch64": "qemu-system-aarch64", "arm64": "qemu-system-aarch64"}.get(arch, f"qemu-system-{arch}")

    def availability(self) -> Availability:
        if not self.ops():
            return Availability(False, f"no ops on {self.target.name}; install it (curl https://ops.city/get.sh "
                                "-sSfL | sh, which needs internet) or build it from github.com/nanovms/ops")
        if not self.target.which(self.qemu_binary()):
            return Availability(False, f"no {self.qemu_binary()} on {self.target.name}; install QEMU there "
                                "(apt-get install qemu-system-x86 or qemu-system-arm)")
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
        return Availability(True)

    def kvm_unusable(self) -> str | None:
        """Why ops would not give QEMU KVM here, or None. ops asks for KVM only when it can open
        /dev/kvm and /proc/cpuinfo shows vmx or svm; otherwise it runs TCG without saying so."""
        kvm = self.target.facts().get("kvm")
        if kvm != "yes":
            return f"/dev/kvm on {self.target.name} is {'absent' if kvm == 'no' else kvm}"
        r = self.target.run(["grep", "-qwE", "vmx|svm", "/proc/cpuinfo"], check=False)
        if not r.ok:
            return (f"{self.target.name}'s /proc/cpuinfo shows no vmx or svm flag, so ops runs QEMU "
                    "without KVM (software emulation)")
        return None

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
        raise ConfigError(f"{built.app.name} ({language}) cannot run on Nanos in edgebench; "
                          "leave it out of the nanos runs")

    def build_image(self, built: BuiltApp, image_name: str, args: list[str] | None = None,
                    skip_if_present: bool = False) -> dict:
        """`ops build` into ops' images directory; returns what was built and how."""
        workdir = self._workdir(built.app.name)
        self.target.run(["mkdir", "-p", workdir])
        program, base_args, files, how = self._program(built, workdir)
        guest_port = built.app.container_port if built.app.is_service else None
        config = image_config(load_base_config(built.app.name), guest_port,
                              args=[*base_args, *(args or [])], files=files)
        config_path = f"{workdir}/{image_name}.json"
        self.target.write_text(config_path, json.dumps(config, indent=2) + "\n")
        if skip_if_present and self.target.run(["test", "-s", self.image_path(image_name)], check=False).ok:
            return {"program": program, "config": config, "config_path": config_path, "program_mode": how}
        cmd = [self.ops(), "build", program, "-c", config_path, "-i", image_name]
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
    def _pinning(self, limits: Limits) -> list[str]:
        # QEMU's threads (vCPUs, I/O, the user-mode network) are outside the VM's limits;
        # pinning ops, and so every QEMU thread it starts, keeps them on the granted cores.
        return ["taskset", "-c", limits.cpuset] if limits.cpuset else []

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
        tag = f"{VM_TAG}={name}"
        argv = ["env", tag, *self._pinning(limits), *ops_argv]
        workdir = self._workdir(artifact.app)
        if not skip_build:
            argv = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "in-workdir", workdir, *argv]
        network = "none" if port is None else f"qemu user-mode (slirp) hostfwd tcp::{port}-:{guest}"
        return LaunchPlan(self.name, artifact.app, name, argv, port or 0, limits=limits,
                          stdout_path=f"{logs}/{name}.out", stderr_path=f"{logs}/{name}.err",
                          network_path=network, state={"tag": tag, "config_path": config_path,
                                                       "program_mode": artifact.details.get("program_mode")})

    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        return self._plan(artifact, limits, port)

    def published_launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        """The artifact's `ops run` with its image build inside the timed span, into an image of
        its own so that the prepared one stays as it was."""
        plan = self._plan(artifact, limits, port, skip_build=False,
                          image_name=f"{artifact.details['image_name']}-published")
        self._images.add(f"{artifact.details['image_name']}-published")
        return plan

    def tagged(self, tag: str, prefix: bool = False) -> list[tuple[int, str]]:
        """[(pid, comm)] of live processes carrying this launch's tag (ops and its QEMU), or with
        prefix=True any tag that starts with `tag`."""
        r = self.target.run(["sh", "-c", _FIND_TAGGED, "find-tagged", tag, "prefix" if prefix else "exact"],
                            check=False)
        out = []
        for line in r.stdout.splitlines():
            pid, _, comm = line.partition(" ")
            if pid.isdigit():
                out.append((int(pid), comm.strip()))
        return out

    def qemu_pid(self, plan: LaunchPlan) -> int | None:
        return next((pid for pid, comm in self.tagged(plan.state["tag"]) if comm.startswith("qemu")), None)

    def qemu_facts(self, pid: int) -> dict:
        """What QEMU was started with and what it runs on, read from /proc."""
        cmdline, fds, affinity = parse_qemu_state(
            self.target.run(["sh", "-c", _QEMU_STATE, "qemu-state", str(pid)], check=False).stdout)
        return self._facts(cmdline, fds, affinity, pid)

    @staticmethod
    def _facts(cmdline: list[str], fds: list[str] | None, affinity: list[str], pid: int | None) -> dict:
        launch = parse_qemu_argv(cmdline)
        accel, evidence = accelerator(launch.accel_requested, fds)
        return {"qemu_pid": pid, "qemu_argv": cmdline, "vcpus": launch.vcpus, "memory_mb": launch.memory_mb,
                "accel_requested": ":".join(launch.accel_requested) or "(default)", "accelerator": accel,
                "accelerator_evidence": evidence, "network": launch.network, "image": launch.image,
                "qemu_cpuset": ",".join(affinity) if affinity else None}

    def applied(self, facts: dict) -> AppliedLimits:
        return AppliedLimits(cpus=float(facts["vcpus"]), memory_mb=facts["memory_mb"], swap_mb=None,
                             cpuset=facts["qemu_cpuset"], cgroup_version=None,
                             cgroup_path="QEMU command line", oom_kills=None)

    def _wait_for_qemu(self, plan: LaunchPlan, timeout_s: float = 10) -> int | None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pid = self.qemu_pid(plan)
            if pid:
                return pid
            time.sleep(0.05)
        return None

    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        pid = self._wait_for_qemu(plan, 5)
        if pid is None:
            raise EdgebenchError(f"nanos/{plan.app}: the app answered but no QEMU carrying {plan.state['tag']} "
                                 "was found")
        facts = self.qemu_facts(pid)
        self._check_accelerator(facts)
        output = "".join(self.target.read_text(p, missing_ok=True) or "" for p in (plan.stdout_path,
                                                                                   plan.stderr_path))
        facts.update(self.versions_brief(), launcher_pid=launcher_pid, pinned_to=plan.limits.cpuset,
                     program_mode=plan.state.get("program_mode"),
                     ops_notes=ops_notes(output))
        plan.state["qemu_pid"] = pid
        return Instance(self.name, plan.app, plan.name, plan.port, f"http://127.0.0.1:{plan.port}", pid,
                        plan.limits, self.applied(facts), facts["network"] if plan.port else "none", plan,
                        details=facts, accelerator=facts["accelerator"], pinned_to=plan.limits.cpuset)

    def versions_brief(self) -> dict:
        v = self.versions()
        return {"ops_version": v.get("ops"), "nanos_version": v.get("nanos") or v.get("local_release")}

    def _check_accelerator(self, facts: dict) -> None:
        if self.require_kvm and facts["accelerator"] != "kvm":
            raise StartFailed(f"KVM is required (require_kvm=True) but the VM ran with {facts['accelerator']} "
                               f"({facts['accelerator_evidence']}); give the user access to /dev/kvm or allow TCG")

    def app_output(self, instance: Instance) -> str:
        # The serial console: ops runs QEMU with -serial stdio in the foreground.
        return self.target.read_text(instance.plan.stdout_path, missing_ok=True) or ""

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        out = (self.target.read_text(plan.stdout_path, missing_ok=True) or "")
        err = (self.target.read_text(plan.stderr_path, missing_ok=True) or "")
        lines = [x.strip() for x in (out + "\n" + err).splitlines() if x.strip()]
        useful = [x for x in lines if not x.startswith(("running local instance", "booting "))]
        return " | ".join(useful[-3:]) or None

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        """QEMU first (ops does not take it down when killed), then ops, then the files."""
        tag = plan.state.get("tag")
        if tag:
            for _ in range(3):
                procs = self.tagged(tag)
                if not procs:
                    break
                qemus = [p for p, comm in procs if comm.startswith("qemu")]
                for p in qemus or [p for p, _ in procs]:
                    kill_pid(self.target, p, grace_s=2.0)
        if pid and is_alive(self.target, pid):
            kill_pid(self.target, pid)
        cgroup = plan.state.pop("cgroup", None)
        if cgroup:
            cgroup.destroy()
        config = plan.state.pop("config_path", None)
        if config:
            self.target.run(["rm", "-f", config], check=False)

    def cleanup(self) -> None:
        super().cleanup()
        # Any VM of this run that the bookkeeping lost (a crash between launch and plan).
        for pid, _ in self.tagged(f"{VM_TAG}=eb-{self.run_tag}-{self.name}-", prefix=True):
            kill_pid(self.target, pid, grace_s=1.0)
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
        state_file = f"{self.logs_dir()}/{plan.name}.qemu"
        plan.state["qemu_state_file"] = state_file
        plan.argv = ["env", f"QEMU_STATE={_QEMU_STATE}", "sh", "-c", _WATCH_QEMU, "watch-qemu",
                     plan.state["tag"], state_file, *plan.argv]
        # ops and QEMU in a cgroup of their own: the host-side faults of running the VM.
        self.count_in_cgroup(plan)
        return plan

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        scope = BatchOutcome(
            faults_scope="host side: ops and QEMU running the VM (the guest's own faults are not the host's)",
            rusage_counts_missing="Nanos' getrusage reported 0 page faults and 0 max RSS: it does not count them")
        text = self.target.read_text(plan.state["qemu_state_file"], missing_ok=True)
        if not text:
            return replace(scope, details={"accelerator_evidence": "QEMU's state was not captured while it ran"})
        cmdline, fds, affinity = parse_qemu_state(text)
        facts = self._facts(cmdline, fds, affinity, pid=None)
        self._check_accelerator(facts)
        keep = ("accelerator_evidence", "accel_requested", "vcpus", "memory_mb", "qemu_cpuset", "qemu_argv")
        return replace(scope, limits_applied=self.applied(facts), accelerator=facts["accelerator"],
                       details={k: facts[k] for k in keep} | self.versions_brief())
