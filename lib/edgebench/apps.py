"""The benchmarked services, and getting them onto a target.

Go programs are cross-compiled on the controlling machine for the target's architecture
(static, CGO_ENABLED=0) and uploaded; Node apps run with the target's own `node`, Python apps
with its own `python3` and wheels the controlling machine fetched for it (edgebench.python_apps). Tools
(sysbench, iperf3, fio) are the target's own binaries, run through `tools/steps` so that a tool's
phases (prepare, run, cleanup) share one container and are timed apart; a tool started as a
service (the iperf3 server) runs as itself, with its `args`. A tool that is not a command on the
target's PATH says where its binary is (`App.locate`): the project's C programs (STREAM) are
compiled on the target with its own compiler, and NPB's binaries are where provisioning built them.
"""

from __future__ import annotations

import hashlib
import os
import platform
import posixpath
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgebench import python_apps, rootfs
from edgebench.errors import ConfigError, EdgebenchError, MissingTool
from edgebench.paths import APPS_DIR, BUILD_DIR, TOOLS_DIR
from edgebench.targets import Target

# uname -m -> (GOARCH, GOARM)
GO_ARCH = {
    "x86_64": ("amd64", None), "amd64": ("amd64", None),
    "aarch64": ("arm64", None), "arm64": ("arm64", None),
    "armv7l": ("arm", "7"), "armv6l": ("arm", "6"),
    "riscv64": ("riscv64", None),
}
GO_BUILD_TIMEOUT_S = 300


@dataclass(frozen=True)
class Readiness:
    """How the probe on the target decides that a service answers, polled at the same cadence
    (<= 1 ms) whatever the kind: HTTP 200 on a path, or a TCP connect plus, optionally, a
    protocol exchange (Redis: send PING, expect a line starting +PONG)."""
    path: str | None = "/io"   # HTTP: the path that must answer 200; None: TCP
    send: str = ""             # TCP: written once connected (\r\n as escapes, as the probe reads them)
    expect: str = ""           # TCP: the reply's first line starts with this; "": a connect is enough

    @property
    def http(self) -> bool:
        return self.path is not None

    def url(self, port: int, host: str = "127.0.0.1") -> str:
        if not self.http:
            raise ConfigError("a TCP service has no URL to poll; the published protocol polls HTTP with curl")
        return f"http://{host}:{port}{self.path}"

    def probe_args(self, port: int, host: str = "127.0.0.1") -> list[str]:
        if self.http:
            return ["-url", self.url(port, host)]
        return ["-tcp", f"{host}:{port}", *(["-send", self.send] if self.send else []),
                *(["-expect", self.expect] if self.expect else [])]


HTTP_READY = Readiness("/io")
TCP_CONNECT = Readiness(None)   # an accepted connection is ready (a server with no line protocol)
# A Go TLS server (net/http over tls.NewListener) answers a plain HTTP request with a 400 line.
TLS_ANSWERS = Readiness(None, send="GET / HTTP/1.0\\r\\n\\r\\n", expect="HTTP/1.0 400")


@dataclass(frozen=True)
class App:
    name: str
    language: str          # "go", "node", "tool" (a binary the target's packages provide) or "python"
    source_dir: Path
    entry: str             # go: package dir "."; node: the script file; tool: the binary's name
    kind: str = "http"     # http or tcp: a service with a port; batch: runs to completion; tool
    readiness: Readiness | None = HTTP_READY   # services: when it answers
    endpoints: tuple[str, ...] = ()            # HTTP paths the load experiments drive
    container_port: int = 8080
    package: str = ""      # tool: the Debian package that provides it (for the error message)
    args: tuple[str, ...] = ()  # a tool run as a service: its arguments, "{port}" the port it listens on
    # A tool that is not a command on the target's PATH: returns its binary's path there (building
    # it if need be) or raises MissingTool saying what to do. Its version is not asked (running an
    # NPB binary with --version runs the benchmark).
    locate: Callable[[Target], str] | None = field(default=None, compare=False)
    # A tool's own files under source_dir (nginx's configuration and page), placed beside it on the
    # target and at the same absolute path inside every runtime; "{data}" in `args` is that folder.
    data: tuple[str, ...] = ()
    # It listens on a port its configuration names (nginx), so every runtime is given that port.
    fixed_port: bool = False

    @property
    def is_service(self) -> bool:
        return self.kind in ("http", "tcp")

    def service_args(self, port: int, data_dir: str = "") -> list[str]:
        """The arguments it is started with as a service listening on `port` (where it listens:
        the host's port natively, the container's port behind a bridge); `data_dir`: where its
        data files are (BuiltApp.data_dir)."""
        return [a.replace("{port}", str(port)).replace("{data}", data_dir) for a in self.args]

    @property
    def source_files(self) -> list[Path]:
        return sorted(p for p in self.source_dir.rglob("*") if p.is_file())


PAPER_ENDPOINTS = ("/io", "/compute")  # paper 000's I/O-bound and CPU-bound requests

APPS: dict[str, App] = {
    "go-http": App("go-http", "go", APPS_DIR / "go-http", ".", endpoints=PAPER_ENDPOINTS),
    "node-http": App("node-http", "node", APPS_DIR / "node-http", "server.js", endpoints=PAPER_ENDPOINTS),
    # Paper 001's home automation: per HTTPS request a DHT11 reading (the kernel's IIO driver, or
    # simulated with its timing) and an LED decision; ready when it accepts a connection (the
    # probe speaks no TLS).
    # Ready when its TLS server answers: a plain HTTP request gets Go's "400: an HTTP request to an
    # HTTPS server". A TCP connect is not enough: a VM's user-mode network (linux-vm, unikraft)
    # accepts on the host before the guest listens, and the first TLS request then hung or was reset.
    "home-automation": App("home-automation", "go", APPS_DIR / "home-automation", ".", readiness=TLS_ANSWERS,
                           endpoints=("/reading", "/stats"), container_port=8443),
    # Batch workloads (LZW, AES, k-means) for the IoMT and page-fault experiments.
    "iomt": App("iomt", "go", APPS_DIR / "iomt", ".", kind="batch", readiness=None),
    # Paper 001's face recognition: OpenCV's Haar cascade and a k-NN over eigenface features, on
    # the target's python3 with pinned wheels (apps/face-recognition/requirements.txt).
    "face-recognition": App("face-recognition", "python", APPS_DIR / "face-recognition", "face.py", kind="batch",
                            readiness=None),
    # Microbenchmarks: the target's own sysbench, and its iperf3 as a server (the client runs on
    # the load generator), ready once it accepts a connection.
    "sysbench": App("sysbench", "tool", TOOLS_DIR / "steps", "sysbench", kind="tool", readiness=None,
                    package="sysbench"),
    "iperf3": App("iperf3", "tool", TOOLS_DIR / "steps", "iperf3", kind="tcp", readiness=TCP_CONNECT,
                  container_port=5201, package="iperf3", args=("-s", "-p", "{port}")),
    # Container overhead (paper 003): fio for the disk, and STREAM's kernels (apps/stream, C and
    # OpenMP) compiled on the target, so every runtime runs the same binary with the same libgomp.
    "fio": App("fio", "tool", TOOLS_DIR / "steps", "fio", kind="tool", readiness=None, package="fio"),
    "stream": App("stream", "tool", APPS_DIR / "stream", "stream", kind="tool", readiness=None, package="gcc",
                  locate=lambda target: c_build(target, APPS_DIR / "stream", "stream")),
    # Off-the-shelf services (paper 002): Debian's redis-server, no persistence (the paper measures
    # GET/SET throughput, not disk), ready when it answers PING.
    # Debian's nginx serving one static 612-byte page (the Unikraft page's Fig. 6), one worker;
    # its port is in apps/nginx/nginx.conf, so every runtime is given that port.
    "nginx": App("nginx", "tool", APPS_DIR / "nginx", "nginx", kind="http", readiness=Readiness("/index.html"),
                 container_port=18480, package="nginx", data=("nginx.conf", "html/index.html"), fixed_port=True,
                 args=("-p", "{data}/", "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;")),
    "redis": App("redis", "tool", TOOLS_DIR / "steps", "redis-server", kind="tcp",
                 readiness=Readiness(None, send="PING\\r\\n", expect="+PONG"), container_port=6379,
                 package="redis-server", args=("--port", "{port}", "--bind", "0.0.0.0", "--protected-mode", "no",
                                               "--save", "", "--appendonly", "no")),
}
# The apps that serve paper 000's endpoints: what time to ready and the HTTP load experiments run.
HTTP_APPS = tuple(name for name, app in APPS.items() if set(PAPER_ENDPOINTS) <= set(app.endpoints))


def get_app(name: str) -> App:
    if name not in APPS:
        raise ConfigError(f"unknown app {name!r}; choose from {', '.join(APPS)}")
    return APPS[name]


@dataclass
class BuiltApp:
    """An app placed on a target, ready for any runtime to package or run."""
    app: App
    arch: str
    remote_path: str          # go: the binary; node: the script
    size_bytes: int           # raw binary / script bundle
    argv: list[str]           # how to run it natively on the target
    local_path: Path | None = None  # go: the binary on the controller
    details: dict = field(default_factory=dict)
    data_dir: str = ""        # the app's data files (App.data) on the target, "" without any

    def service_args(self, port: int) -> list[str]:
        return self.app.service_args(port, self.data_dir)

    def service_argv(self, port: int) -> list[str]:
        """How to run it natively as a service listening on `port`. A tool serves as itself:
        tools/steps is for phases that run to completion, and stopping it would not stop the tool."""
        program = [self.remote_path] if self.app.language == "tool" else self.argv
        return [*program, *self.service_args(port)]


def _source_digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def go_build(source_dir: Path, out_name: str, arch: str, static_pie: bool = False) -> Path:
    """Static build for linux/<arch>, cached by source digest under .build/. `static_pie`: a
    static position-independent executable instead (Unikraft's ELF loader maps only those),
    linked by the controller's C compiler, so only for the controller's own architecture."""
    if arch not in GO_ARCH:
        raise ConfigError(f"no Go architecture known for target arch {arch!r}; "
                          f"supported: {', '.join(GO_ARCH)}")
    goarch, goarm = GO_ARCH[arch]
    go = shutil.which("go")
    if not go:
        raise ConfigError("Go is needed on the controlling machine to build the apps for the target; "
                          "install Go >= 1.22 (e.g. `apt-get install golang`) and retry")
    digest = _source_digest(sorted(p for p in source_dir.rglob("*") if p.is_file()))
    out = BUILD_DIR / f"{out_name}-linux-{goarch}{goarm or ''}{'-pie' if static_pie else ''}-{digest}"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOOS="linux", GOARCH=goarch, GOTOOLCHAIN="local",
               GOFLAGS="-mod=mod")
    if goarm:
        env["GOARM"] = goarm
    flags = ["-ldflags=-s -w"]
    if static_pie:
        if GO_ARCH.get(platform.machine(), (None,))[0] != goarch or not shutil.which("cc"):
            raise ConfigError(f"a static-PIE build for {arch} needs a C compiler for {arch} on the controlling "
                              f"machine (this one is {platform.machine()}"
                              f"{'' if shutil.which('cc') else ', without cc'}); "
                              "run edgebench from a machine of the target's architecture with gcc installed")
        env["CGO_ENABLED"] = "1"
        # Go's own resolver and user lookup: glibc's, linked statically, would want its NSS modules.
        flags = ["-buildmode=pie", "-tags=netgo,osusergo", "-ldflags=-s -w -linkmode external -extldflags -static-pie"]
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")  # drivers for several devices may build at once
    r = subprocess.run([go, "build", "-trimpath", *flags, "-o", str(tmp), "."],
                       cwd=source_dir, env=env, capture_output=True, text=True, timeout=GO_BUILD_TIMEOUT_S)
    if r.returncode != 0:
        raise EdgebenchError(f"go build of {source_dir} failed:\n{r.stderr[-2000:]}")
    tmp.rename(out)
    return out


def place_app(target: Target, app: App) -> BuiltApp:
    """Build (Go) or bundle (Node) the app and upload it to the target's workspace."""
    facts = target.facts()
    arch = facts["arch"]
    base = f"{target.workspace}/apps/{app.name}"
    if app.language == "go":
        binary = go_build(app.source_dir, app.name, arch)
        remote = target.upload_if_changed(binary, f"{base}/{app.name}", mode="755")
        return BuiltApp(app, arch, remote, binary.stat().st_size, [remote], local_path=binary,
                        details={"go_build": binary.name})
    if app.language == "node":
        node = target.which("node")
        if not node:
            raise MissingTool("node", f"{target.name} has no `node`; install Node.js there (e.g. "
                              "`apt-get install nodejs`) or leave node-http out of `apps`")
        size = 0
        for f in app.source_files:
            rel = f.relative_to(app.source_dir)
            target.upload_if_changed(f, f"{base}/{rel}")
            size += f.stat().st_size
        script = f"{base}/{app.entry}"
        sizes = target.run(["sh", "-c", rootfs.own_bytes('"$1"'), "size", node]).stdout.split()
        node_size, library_size = map(int, sizes)
        version = target.run([node, "--version"], check=False).stdout.strip()
        return BuiltApp(app, arch, script, size, [node, script],
                        details={"node": version or None, "node_binary_bytes": node_size,
                                 "node_library_bytes": library_size})
    if app.language == "tool":
        path = app.locate(target) if app.locate else target.which(app.entry)
        if not path:
            raise MissingTool(app.entry, f"{target.name} has no `{app.entry}`; install it there (`apt-get install "
                              f"{app.package or app.entry}`, or `make provision TARGET=...`)")
        steps = place_steps(target)
        size = int(target.run(["stat", "-L", "-c", "%s", path]).stdout.strip())
        version = [] if app.locate else target.run([path, "--version"], check=False).stdout.strip().splitlines()
        # Run as `steps TOOL ARGS [::: TOOL ARGS]`: TOOL is found on PATH in every runtime (a
        # container has it in /usr/local/bin; natively a located tool's directory goes first).
        argv = [steps, "-path", posixpath.dirname(path)] if app.locate else [steps]
        data_dir = ""
        if app.data:
            data_dir = base
            for rel in app.data:
                target.upload_if_changed(app.source_dir / rel, f"{base}/{rel}")
        return BuiltApp(app, arch, path, size, argv, data_dir=data_dir,
                        details={"tool": path, "version": version[0] if version else None, "steps": steps,
                                 **({"data": [f"{base}/{rel}" for rel in app.data]} if app.data else {})})
    if app.language == "python":
        python = python_apps.interpreter(target)
        site = python_apps.place_site(target, app.name, app.source_dir, python)
        script = target.upload_if_changed(app.source_dir / app.entry, f"{base}/{app.entry}")
        return BuiltApp(app, arch, script, (app.source_dir / app.entry).stat().st_size, [python["executable"], script],
                        details={"python": python["executable"], "python_version": python["full_version"],
                                 "python_home": python["base_prefix"], "stdlib": python["stdlib"], "site": site,
                                 "requirements": python_apps.requirements_of(app.source_dir)})
    raise ConfigError(f"app {app.name}: unsupported language {app.language!r}")


C_BUILD_TIMEOUT_S = 300


def c_build(target: Target, source_dir: Path, name: str, cflags: tuple[str, ...] = ("-O2", "-fopenmp"),
            libs: tuple[str, ...] = ("-lm",)) -> str:
    """Compile the project's C program on the target with the target's own compiler (so it links
    the libc and libgomp every runtime then bundles), once per source digest; its path there."""
    cc = target.which("cc") or target.which("gcc")
    if not cc:
        raise MissingTool("cc", f"{target.name} has no C compiler to build {name}; install gcc there "
                          "(`apt-get install gcc`, or `make provision TARGET=...`)")
    sources = sorted(p for p in source_dir.rglob("*.c"))
    digest = _source_digest(sources)
    base = f"{target.workspace}/apps/{name}"
    binary = f"{base}/bin-{digest}/{name}"
    if target.run(["test", "-x", binary], check=False).ok:
        return binary
    remote = [target.upload_if_changed(f, f"{base}/src/{f.relative_to(source_dir)}") for f in sources]
    target.run(["mkdir", "-p", posixpath.dirname(binary)])
    r = target.run([cc, *cflags, "-o", f"{binary}.tmp", *remote, *libs], timeout=C_BUILD_TIMEOUT_S, check=False)
    if not r.ok:
        raise EdgebenchError(f"building {name} on {target.name} failed ({cc} {' '.join(cflags)}):\n"
                             f"{r.stderr[-1500:]}")
    target.run(["mv", f"{binary}.tmp", binary])
    return binary


def place_probe(target: Target) -> str:
    """The fair time-to-ready probe, built for the target and uploaded."""
    binary = go_build(TOOLS_DIR / "probe", "probe", target.facts()["arch"])
    return target.upload_if_changed(binary, f"{target.workspace}/bin/probe", mode="755")


def place_openloop(target: Target) -> str:
    """tools/openloop (the built-in open-loop HTTP load generator), built and uploaded."""
    binary = go_build(TOOLS_DIR / "openloop", "openloop", target.facts()["arch"])
    return target.upload_if_changed(binary, f"{target.workspace}/bin/openloop", mode="755")


def place_forward(target: Target) -> str:
    """tools/forward (a TCP relay from a port on the target to a service behind it), built and uploaded."""
    binary = go_build(TOOLS_DIR / "forward", "forward", target.facts()["arch"])
    return target.upload_if_changed(binary, f"{target.workspace}/bin/forward", mode="755")


def place_steps(target: Target) -> str:
    """tools/steps (runs a tool's phases in sequence, no shell needed), built and uploaded."""
    binary = go_build(TOOLS_DIR / "steps", "steps", target.facts()["arch"])
    return target.upload_if_changed(binary, f"{target.workspace}/bin/steps", mode="755")
