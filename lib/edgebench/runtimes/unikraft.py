"""Unikraft (paper 002) under QEMU: a prebuilt Unikraft kernel, and edgebench's own apps run on it
through Unikraft's ELF loader, so the unikernel serves the same Go code as every other runtime.

- images: edgebench neither vendors nor builds Unikraft. The ELF loader is app-elfloader's
  `qemu-x86_64-initrd` build (what kraft calls `unikraft.org/base`), a file named
  `elfloader_qemu-<arch>` or `base_qemu-<arch>` in a folder on the controlling machine that
  `EDGEBENCH_UNIKRAFT_IMAGES` (or the runtime's `images_dir`) names; it is copied into the
  target's workspace when it changed. Its version is read from the image's own banner.
- package (untimed): the app built as a static PIE (the loader maps position-independent
  executables only) into a newc cpio archive at /app/program, written by the controlling machine
  (cpio.py): the loader's initrd, unpacked into its RAM file system at boot. Its size is the
  image size, the loader's beside it.
- start: QEMU `pc` with `-kernel` (the loader) and `-initrd` (the app), one vCPU (Unikraft 0.16's
  loader schedules one), the run's memory, `-cpu max` under TCG (Unikraft's random driver wants
  RDRAND/RDSEED, which TCG's default CPU lacks), the port forwarded by QEMU's user-mode network,
  every QEMU thread pinned to the granted cores, and the loader's command line: the guest's
  address (`netdev.ip=`), the environment (`env.vars=`, where the image parses it), then `--`
  and the program with its arguments. Limits and accelerator are read back from QEMU as for
  Nanos and linux-vm; the serial console goes through `probe -stamp` as for linux-vm.
- boot events (host clock): SeaBIOS's banner and hand-over, Unikraft's first console line (its
  network coming up), "Powered by Unikraft" (its boot is done and the loader's main runs: the
  app is being loaded), then the app's listening line.

Paper 002's own Unikraft builds of nginx and Redis (app-nginx, app-redis: `nginx_qemu-<arch>`,
`redis_qemu-<arch>` in the same folder) serve in the services notebook: edgebench packs their root
file system (its nginx configuration and 612-byte page, its Redis options as a redis.conf), so they
serve what Debian's binaries serve in the other runtimes. Unikraft has no fork(): nginx runs
without a master process, as a daemon-less single process.

Services only: when a Go program exits on Unikraft 0.16's loader the VM does not halt (the IoMT
program printed its record, matching native's, and the VM stayed up), so a batch run would end
only at its timeout. `microvm` is not offered: the loader finds no network device there (its
virtio-mmio devices are named after the `--`, among the program's arguments).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import replace
from pathlib import Path

from edgebench.apps import BuiltApp, go_build
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.paths import BUILD_DIR
from edgebench.provisioning.needs import TargetNeeds
import edgebench.runtimes.cpio as cpio
import edgebench.runtimes.linux_guest as linux_guest
import edgebench.runtimes.qemu as qemu
from edgebench.runtimes.base import app_env
from edgebench.runtimes.contract import Artifact, Availability, Instance, LaunchPlan, Limits
from edgebench.runtimes.vm import StampedConsoleVm, boot_events, console_args, user_network

IMAGES_ENV = "EDGEBENCH_UNIKRAFT_IMAGES"
# The ELF loader's file names: app-elfloader's build name, and kraft's name for it.
LOADER_NAMES = ("elfloader", "base")
# Machine types per architecture (only x86_64's loader was tried; aarch64 would be `virt`).
MACHINES = {"x86_64": ("pc",)}
NET_DEVICE = "virtio-net-pci,romfile="   # no iPXE ROM to load (seconds under TCG)
# A VM has a memory size even when the run sets no limit: kraft's default for the loader; Redis
# needs more (96 MiB served here, 80 MiB did not: "Can't initialize Background Jobs").
DEFAULT_MEMORY_MB = 64
DEFAULT_MEMORY_MB_OF = {"redis": 128}
# Unikraft's boot banner begins so: one line on the loader, an ASCII-art logo on the others.
BOOTED = "Powered by"
PROGRAM = "/app/program"
# Paper 002's Unikraft builds of the off-the-shelf services: apps whose image is `<app>_qemu-<arch>`.
SERVICE_KERNELS = ("nginx", "redis")
# The banner's codename and version as stored in the image: "Unikraft Telesto (0.16.3~e453b74a)"
# in the loader, "Unikraft Telesto 0.16.3~e453b74a" in the services' images.
_BANNER = re.compile(rb"Unikraft (\w+) \(?(\d+\.\d+\.\d+[^)\x00\s]*)")
# A library's parameters sit in a section named after it: the environment's are in
# libposix_environ's, built only with CONFIG_LIBPOSIX_ENVIRON_LIBPARAM.
_ENV_PARAMS = b".uk_libparam_params_libposix_environ"


def images_folder(images_dir: str | None = None) -> Path | None:
    """The folder of prebuilt Unikraft images on the controlling machine, or None when unset."""
    chosen = images_dir or os.environ.get(IMAGES_ENV, "")
    return Path(chosen).expanduser() if chosen else None


def find_loader(folder: Path, arch: str) -> Path | None:
    return next((p for n in LOADER_NAMES if (p := folder / f"{n}_qemu-{arch}").is_file()), None)


def service_rootfs(app) -> tuple[dict, list[str]]:
    """What edgebench packs for a service's own Unikraft image ({path: (content, mode)}) and the
    arguments it is started with: the same configuration as Debian's binaries get elsewhere."""
    if app.name == "nginx":
        conf = (app.source_dir / "nginx.conf").read_text()
        # No fork() on Unikraft: one process, no master, no user switch; errors to the console.
        conf = "daemon off;\nmaster_process off;\nerror_log stderr;\n" + "\n".join(
            line for line in conf.splitlines() if not line.strip().startswith(("user ", "#")))
        files = {"nginx/conf/nginx.conf": (conf.encode() + b"\n", 0o644),
                 "nginx/logs/error.log": (b"", 0o644),   # opened before the configuration is read
                 "tmp/.edgebench": (b"", 0o644)}          # pid and temporary files
        files.update({f"nginx/{rel}": (app.source_dir / rel, 0o644) for rel in app.data if rel != "nginx.conf"})
        return files, ["-p", "/nginx/", "-c", "conf/nginx.conf"]
    if app.name == "redis":
        # Its command-line options ("--port 6379 --save ''") as redis.conf lines, the port the guest's.
        words = app.service_args(app.container_port)
        empty = '""'  # redis.conf's empty argument (`save ""`)
        lines = [f"{k.lstrip('-')} {v or empty}" for k, v in zip(words[::2], words[1::2])]
        return {"redis.conf": ("\n".join(lines).encode() + b"\n", 0o644)}, ["/redis.conf"]
    raise ConfigError(f"no Unikraft image is known for {app.name}")


def image_facts(image: Path) -> dict:
    """What the image says about itself: Unikraft's codename and version, and whether its
    command line takes environment variables."""
    data = image.read_bytes()
    banner = _BANNER.search(data)
    return {"unikraft_version": banner.group(2).decode() if banner else None,
            "unikraft_codename": banner.group(1).decode() if banner else None,
            "env_params": _ENV_PARAMS in data}


def loader_cmdline(env: list[str], args: list[str], pass_env: bool, program: str | None = PROGRAM) -> str:
    """The loader's command line: Unikraft's own parameters, `--`, the program and its arguments
    (a service's own image: its arguments only, program=None).
    The guest's address comes first, and always: with no parameter before it, Unikraft 0.16
    takes `--` for the program's name."""
    words = [f"netdev.ip={linux_guest.GUEST_IP}:{linux_guest.GUEST_GATEWAY}"]
    if env and pass_env:
        words.append("env.vars=[" + " ".join(_quoted(w) for w in env) + "]")
    return " ".join([*words, "--", *([program] if program else []), *(_quoted(a) for a in args)])


def _quoted(word: str) -> str:
    """Unikraft splits its command line on spaces and honours double quotes."""
    if '"' in word or "\n" in word:
        raise ValueError(f"a Unikraft command-line word cannot hold a double quote or a newline: {word!r}")
    return f'"{word}"' if (not word or " " in word or "\t" in word) else word


class UnikraftRuntime(StampedConsoleVm):
    name = "unikraft"
    colour = "#bcbd22"
    # At 8 MiB the kernel's memory init fails; from 12 MiB it boots (an app needs more: go-http's
    # 7 MB binary is unpacked into RAM and then copied by the loader, 32 MiB serves here).
    min_memory_mb = 12
    languages = ("go",)

    @classmethod
    def runs(cls, app) -> bool:
        """Go services, and nginx and Redis from their own images: a batch program's exit does
        not halt the VM (see the module's notes)."""
        return (app.language == "go" and app.is_service) or app.name in SERVICE_KERNELS

    @classmethod
    def runs_what(cls) -> str:
        return "Go services, and nginx and Redis from their own Unikraft images"

    @classmethod
    def target_needs(cls, arch: str) -> TargetNeeds:
        return qemu.qemu_needs(arch, "unikraft runtime")

    def __init__(self, target, run_tag=None, images_dir: str | None = None, machine: str = "default",
                 accel: str = "auto", require_kvm: bool = False):
        super().__init__(target, run_tag)
        machines = MACHINES.get(self._arch(), ())
        self.machine = machines[0] if machine in ("default", None, "") and machines else machine
        if machines and self.machine not in machines:
            raise ConfigError(f"unikraft machine {machine!r} is not offered on {self._arch()}; choose from "
                              f"{', '.join(machines)} (on microvm Unikraft 0.16's ELF loader finds no network device)")
        self.choose_accel(accel, require_kvm)
        self.images_dir = images_dir

    @classmethod
    def machines_for(cls, arch: str) -> tuple[str, ...]:
        return MACHINES.get(arch, ())

    def options(self) -> dict:
        """What a variant of this runtime (another machine type) is made with."""
        return {"images_dir": self.images_dir, "accel": self.accel, "require_kvm": self.require_kvm}

    # -- the loader ----------------------------------------------------------------------
    def loader(self) -> Path | None:
        folder = images_folder(self.images_dir)
        return find_loader(folder, self._arch()) if folder else None

    def facts_of_loader(self) -> dict:
        if "_loader_facts" not in self.__dict__:
            local = self.loader()
            self._loader_facts = {**image_facts(local), "loader": local.name, "loader_bytes": local.stat().st_size} \
                if local else {}
        return self._loader_facts

    def placed(self, local: Path) -> str:
        """An image in the target's workspace (copied when it changed)."""
        return self.target.upload_if_changed(local, f"{self.target.workspace}/unikraft/{local.name}")

    def availability(self) -> Availability:
        if self._arch() not in MACHINES:
            return Availability(False, f"unikraft runs x86_64 targets in edgebench ({self.target.name} is "
                                f"{self._arch()}): only that ELF loader build was tried")
        folder = images_folder(self.images_dir)
        if folder is None:
            return Availability(False, f"no Unikraft images: set {IMAGES_ENV} to a folder holding app-elfloader's "
                                f"qemu-x86_64-initrd build as elfloader_qemu-{self._arch()} "
                                "(kraft: unikraft.org/base); edgebench does not build Unikraft")
        if self.loader() is None:
            return Availability(False, f"{folder} holds no Unikraft ELF loader (looked for "
                                f"{' or '.join(f'{n}_qemu-{self._arch()}' for n in LOADER_NAMES)})")
        missing = self.qemu_missing()
        if missing is not None:
            return missing
        return self.kvm_missing() or self.inside_emulation() or Availability(True)

    def describe(self) -> str:
        f, no_kvm = self.facts_of_loader(), self.kvm_unusable()
        return (f"Unikraft {f.get('unikraft_version')} ({f.get('unikraft_codename')}), ELF loader {f.get('loader')}; "
                f"machine {self.machine}; {'VMs run under TCG: ' + no_kvm if no_kvm else 'kvm: yes'}")

    def versions_brief(self) -> dict:
        f = self.facts_of_loader()
        return {"unikraft_version": f.get("unikraft_version"), "loader": f.get("loader"), "machine": self.machine,
                "env_passed": f.get("env_params")}

    # -- images --------------------------------------------------------------------
    def package(self, built: BuiltApp, build: str = "elfloader") -> Artifact:
        if not self.runs(built.app):
            why = ("when a program exits, Unikraft 0.16's ELF loader does not halt the VM" if built.app.language == "go"
                   else f"it runs {self.runs_what()}")
            raise ConfigError(f"{built.app.name} ({built.app.language}, {built.app.kind}) cannot run on unikraft in "
                              f"edgebench: {why}; leave it out of the unikraft runs")
        if built.app.name in SERVICE_KERNELS:
            return self._package_service(built)
        if self.loader() is None:
            raise EdgebenchError(self.availability().reason)
        binary = go_build(built.app.source_dir, built.app.name, built.arch, static_pie=True)
        local = binary.with_name(f"{binary.name}.cpio")
        if not local.exists():
            local.write_bytes(cpio.newc({PROGRAM.lstrip("/"): (binary, 0o755)}))
        initrd = self.target.upload_if_changed(local, f"{self.target.workspace}/unikraft/{built.app.name}.cpio")
        loader = self.placed(self.loader())
        f = self.facts_of_loader()
        details = {"initrd": initrd, "uk_kernel": loader, "program": binary.name,
                   "program_bytes": binary.stat().st_size,
                   "unikraft_version": f.get("unikraft_version"), "machine": self.machine,
                   "build_command": "go build -buildmode=pie (static-pie) | cpio.newc"}
        # The app's own size is the static PIE's: what the unikernel holds (a little larger than the
        # static binary the other runtimes run).
        return Artifact(self.name, built.app.name, initrd, local.stat().st_size, binary.stat().st_size, built,
                        build="elfloader", details=details,
                        extra_sizes=[("kernel_size", f.get("loader_bytes"), "bytes", loader)])

    def _package_service(self, built: BuiltApp) -> Artifact:
        """A service's own Unikraft image, and the root file system edgebench packs for it."""
        folder = images_folder(self.images_dir)
        name = f"{built.app.name}_qemu-{self._arch()}"
        image = folder / name if folder else None
        if image is None or not image.is_file():
            raise EdgebenchError(f"no Unikraft image of {built.app.name}: put app-{built.app.name}'s qemu build "
                                 f"as {name} in {folder or f'the folder {IMAGES_ENV} names'} "
                                 f"(kraft: unikraft.org/{built.app.name})")
        files, args = service_rootfs(built.app)
        archive = cpio.newc(files)
        local = BUILD_DIR / f"unikraft-{built.app.name}-rootfs-{hashlib.sha256(archive).hexdigest()[:12]}.cpio"
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(archive)
        out = self.target.upload_if_changed(local, f"{self.target.workspace}/unikraft/{built.app.name}-rootfs.cpio")
        facts = image_facts(image)
        kernel = self.placed(image)
        details = {"initrd": out, "uk_kernel": kernel, "service_args": args,
                   "unikraft_version": facts["unikraft_version"], "machine": self.machine,
                   "build_command": f"{name} (app-{built.app.name}) + cpio.newc of its files"}
        # The service is its image: the app's size is the image's, the root file system beside it.
        return Artifact(self.name, built.app.name, kernel, image.stat().st_size, image.stat().st_size, built,
                        build=f"app-{built.app.name}", details=details,
                        extra_sizes=[("rootfs_size", len(archive), "bytes", out)])

    # -- starting and stopping -------------------------------------------------------
    def qemu_argv(self, artifact: Artifact, limits: Limits, port: int, args: list[str]) -> list[str]:
        accel = self.accel_used()
        app = artifact.built.app
        service_image = app.name in SERVICE_KERNELS
        # One vCPU: Go gets as many Ps as the guest has CPUs. With GOMAXPROCS=2 (the fair protocol's
        # 2 CPUs) the guest's network stopped for good within seconds of 100 connections, 7 of 7 tries.
        guest = replace(limits, gomaxprocs=1) if limits.gomaxprocs else limits
        env = [] if service_image else app_env(artifact.built, guest, app.container_port)
        memory = limits.memory_mb or DEFAULT_MEMORY_MB_OF.get(app.name, DEFAULT_MEMORY_MB)
        return [qemu.qemu_binary(self._arch()), "-M", self.machine,
                *(["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-cpu", "max"]),
                "-m", f"{int(memory)}M", "-smp", "1",
                "-nodefaults", "-no-user-config", "-display", "none", *console_args(self.machine), "-no-reboot",
                "-kernel", artifact.details["uk_kernel"], "-initrd", artifact.details["initrd"],
                "-append", loader_cmdline(env, args, bool(self.facts_of_loader().get("env_params")),
                                          None if service_image else PROGRAM),
                *user_network(port, artifact.built.app.container_port, NET_DEVICE)]

    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        args = artifact.details.get("service_args") or artifact.built.service_args(artifact.built.app.container_port)
        return self.stamped_plan(artifact, limits, port, args)

    def boot_phases(self, instance: Instance) -> dict[str, int]:
        """On the host's clock: the firmware's events, Unikraft's first line, and its banner, after
        which the loader's main loads the app (app_exec)."""
        return boot_events(self.console_lines(instance.plan), {BOOTED: "app_exec"})

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        out = self.target.read_text(plan.stdout_path, missing_ok=True) or ""
        err = self.target.read_text(plan.stderr_path, missing_ok=True) or ""
        lines = [x.strip() for x in (out + "\n" + err).replace("\r", "").splitlines() if x.strip()]
        # Too little memory shows as Unikraft's own errors: its memory init, unpacking the initrd
        # into RAM, or the loader copying the program.
        out_of_memory = ("Mem init failed", "Failed to extract cpio", "Failed to copy the executable", "Out of memory")
        if any(w in x for x in lines for w in out_of_memory):
            lines.append(f"Unikraft ran out of memory at "
                         f"{plan.limits.memory_mb or DEFAULT_MEMORY_MB_OF.get(plan.app, DEFAULT_MEMORY_MB):g} MiB; "
                         "raise the memory limit")
        return " | ".join(lines[-3:]) or None

    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        raise ConfigError(f"{artifact.app} cannot run as a batch program on unikraft: the VM does not halt when the "
                          "program exits (Unikraft 0.16's ELF loader); leave unikraft out of batch experiments")
