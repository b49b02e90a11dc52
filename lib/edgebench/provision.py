"""Prepare a target for every edgebench experiment: `make provision [TARGET=local|user@host]`.

    python -m edgebench.provision --target pi@raspberrypi [--check]

Idempotent. Through the target's package manager (apt-get on Debian, Ubuntu and Raspberry Pi
OS; anything else gets the list of packages to install by hand), it installs only what is
missing: dpkg-query is asked first, so a second run installs nothing and takes seconds. A
package the target's repositories do not carry (e.g. `lxd` before Debian 12) is reported with
the reason, and the rest goes on. Then it starts what must run: the Docker daemon (systemctl
when systemd is PID 1, else `dockerd` in the background, logging to the workspace) and LXD
(tools/lxd/setup.sh: the daemon, a dir pool and a bridge; then edgebench's base image, whose
debootstrap is cached on the target). ops, the Nanos CLI, is installed with its official
installer only where https://ops.city answers. It ends with one row per runtime and per tool:
ok, or missing and why.

Every command goes through `Target.run`, so an SSH target is provisioned exactly like this
machine. Needs root there, or passwordless sudo (`sudo -n true`); otherwise it stops before
changing anything. `--check` changes nothing: it prints the table and what would be done.

The logic is data plus small functions: `packages_for` (what the experiments need, named for
this distribution and architecture), `make_plan` (what is present, missing, not available),
`install_argv`, then `Provisioner` runs the plan.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from edgebench.errors import EdgebenchError
from edgebench.paths import TOOLS_DIR
from edgebench.runtimes.qemu import QEMU_BINARIES, qemu_binary, qemu_system
from edgebench.targets import Target, connect, sh

# -- what the experiments need --------------------------------------------------------------

# purpose -> logical packages. A logical name resolves to the distribution's package(s) below.
PURPOSES: dict[str, tuple[str, ...]] = {
    "docker runtime": ("docker", "containerd", "runc", "iptables"),
    "lxd runtime": ("lxd", "firewall", "dnsmasq", "debootstrap"),
    "nanos runtime": ("qemu", "qemu-utils"),
    "http load (wrk)": ("wrk",),
    "network baseline": ("iperf3",),
    "cpu baseline": ("sysbench",),
    "counters (perf stat)": ("perf",),
    "iomt comparisons": ("ncompress", "openssl"),
    "published protocol": ("curl",),
    "node app": ("nodejs",),
    "process and network tools": ("procps", "iproute2"),
}
# Only for `make test` (--for-tests): the second "hosts" of the SSH tests run their own sshd.
TEST_PURPOSES: dict[str, tuple[str, ...]] = {"ssh test hosts (make test)": ("sshd",)}


@dataclass(frozen=True)
class Need:
    """How a logical need maps to a distribution package, and what it takes to *run* it."""
    package: str
    # Any one of these groups of commands, all on PATH, satisfies the need without the package
    # (Docker CE, LXD from snap, node from nvm must not be replaced). A client alone is not
    # enough: the docker CLI without dockerd, containerd and runc cannot run a container.
    runs_with: tuple[tuple[str, ...], ...] = ()
    client: str | None = None        # a command that may be present without what runs it
    conflicts: tuple[str, ...] = ()  # installed packages that rule the package out (apt would remove them)


APT_PACKAGES: dict[str, Need] = {
    "docker": Need("docker.io", (("dockerd",),), client="docker",
                   conflicts=("docker-ce", "docker-ce-cli", "moby-engine", "moby-cli", "podman-docker")),
    "containerd": Need("containerd", (("containerd",),), conflicts=("containerd.io",)),
    "runc": Need("runc", (("runc",),), conflicts=("containerd.io",)),
    # dockerd programs iptables (iptables-nft on Debian 12); LXD's bridge takes iptables or nft.
    "iptables": Need("iptables", (("iptables",),)),
    "firewall": Need("iptables", (("iptables",), ("nft",))),
    "lxd": Need("lxd", (("lxd", "lxc"),), client="lxc"),
    "dnsmasq": Need("dnsmasq-base", (("dnsmasq",),)),  # DHCP on LXD's bridge (a Recommends of lxd)
    "debootstrap": Need("debootstrap", (("debootstrap",),)),
    "qemu-utils": Need("qemu-utils", (("qemu-img",),)),
    "wrk": Need("wrk", (("wrk",),)),
    "iperf3": Need("iperf3", (("iperf3",),)),
    "sysbench": Need("sysbench", (("sysbench",),)),
    "ncompress": Need("ncompress", (("compress",),)),
    "openssl": Need("openssl", (("openssl",),)),
    "curl": Need("curl", (("curl",),)),
    "nodejs": Need("nodejs", (("node",),)),
    "procps": Need("procps", (("ps",),)),
    "iproute2": Need("iproute2", (("ip",),)),
    "sshd": Need("openssh-server", (("sshd",),)),
}

# QEMU for the machine's own architecture (Nanos runs as a KVM guest of the same kind):
# qemu_system(arch) in runtimes/qemu.py, the one map of binary and package.

FAMILIES = ("debian", "ubuntu", "raspbian")  # apt-based; raspbian = 32-bit Raspberry Pi OS

# Shown when a target has no apt-get: what to install with its own package manager.
BY_HAND = ("Docker Engine (dockerd, containerd, runc, docker)", "iptables", "wrk", "sysbench", "iperf3", "LXD (lxd, lxc) with dnsmasq",
           "debootstrap", "qemu-system-<arch> and qemu-img", "perf (matching the kernel)",
           "ncompress (compress)", "openssl", "curl", "Node.js (node)", "procps", "iproute2")

OPS_INSTALLER = "https://ops.city/get.sh"
OPS_REACH_TIMEOUT_S = 5
APT_UPDATE_MAX_AGE_S = 24 * 3600  # when only unavailable packages are missing, re-ask apt this often
DOCKER_WAIT_S = 60


@dataclass(frozen=True)
class Tool:
    """A tool the experiments run, and how to ask its version."""
    name: str
    argv: tuple[str, ...]
    any_exit: bool = False  # `wrk --version` prints its version and exits 1


def tools_for(arch: str) -> list[Tool]:
    qemu = qemu_binary(arch)
    return [Tool("wrk", ("wrk", "--version"), any_exit=True), Tool("sysbench", ("sysbench", "--version")),
            Tool("iperf3", ("iperf3", "--version")), Tool("perf", ("perf", "--version")),
            Tool("compress", ("compress", "-V")), Tool("openssl", ("openssl", "version")),
            Tool("curl", ("curl", "--version")), Tool("node", ("node", "--version")),
            Tool("debootstrap", ("debootstrap", "--version")), Tool(qemu, (qemu, "--version")),
            Tool("ops", ("ops", "version")),
            # What the runtimes run on: a client on PATH says nothing about these.
            Tool("dockerd", ("dockerd", "--version")), Tool("containerd", ("containerd", "--version")),
            Tool("runc", ("runc", "--version")), Tool("iptables", ("iptables", "--version")),
            Tool("lxd", ("lxd", "--version")), Tool("dnsmasq", ("dnsmasq", "--version"))]


# Commands whose presence the survey reports (`command -v`, with sbin, /snap/bin and ~/.ops/bin).
SURVEY_COMMANDS = sorted({c for need in APT_PACKAGES.values() for group in need.runs_with for c in group}
                         | {need.client for need in APT_PACKAGES.values() if need.client}
                         | set(QEMU_BINARIES) | {"perf", "ops"})


# -- the plan -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Package:
    name: str                # the distribution's package
    purpose: str
    runs_with: tuple[tuple[str, ...], ...] = ()  # any group all on PATH = satisfied without the package
    client: str | None = None
    conflicts: tuple[str, ...] = ()

    @property
    def command(self) -> str | None:
        """The command a tool row of the table knows this package by."""
        return self.runs_with[0][0] if self.runs_with else None


class UnsupportedTarget(EdgebenchError):
    """No package manager edgebench drives; the message lists what to install by hand."""


class ProvisionError(EdgebenchError):
    """Provisioning cannot start (privileges); the message says what to change."""


def os_family(os_release: dict) -> str | None:
    """debian, ubuntu or raspbian from /etc/os-release's ID and ID_LIKE; None otherwise."""
    os_id = (os_release.get("os_id") or "").lower()
    if os_id in FAMILIES:
        return os_id
    like = (os_release.get("os_like") or "").lower().split()
    for family in ("ubuntu", "raspbian", "debian"):  # Mint: ID_LIKE="ubuntu debian"
        if family in like:
            return family
    return None


def packages_for(family: str, arch: str, kernel: str = "", for_tests: bool = False
                 ) -> tuple[list[Package], dict[str, str]]:
    """The packages every purpose needs on this distribution and architecture, and the logical
    names that have no package here (with the reason). A package two purposes need appears once,
    with both purposes."""
    if family not in FAMILIES:
        raise UnsupportedTarget(unsupported_message(family or "this system"))
    packages: list[Package] = []
    unresolved: dict[str, str] = {}
    purposes = {**PURPOSES, **(TEST_PURPOSES if for_tests else {})}
    for purpose, names in purposes.items():
        for logical in names:
            if logical == "qemu":
                system = qemu_system(arch)
                if system is None:
                    unresolved[logical] = f"no QEMU package known for architecture {arch}"
                else:
                    binary, pkg = system
                    packages.append(Package(pkg, purpose, ((binary,),)))
            elif logical == "perf":
                if family == "ubuntu":
                    # perf on Ubuntu is a wrapper that needs the tools built for the running kernel.
                    packages.append(Package("linux-tools-common", purpose))
                    if kernel:
                        packages.append(Package(f"linux-tools-{kernel}", purpose))
                else:
                    packages.append(Package("linux-perf", purpose, (("perf",),)))
            else:
                need = APT_PACKAGES[logical]
                packages.append(Package(need.package, purpose, need.runs_with, need.client, need.conflicts))
    merged: dict[str, Package] = {}
    for p in packages:
        first = merged.get(p.name)
        merged[p.name] = p if first is None else replace(first, purpose=f"{first.purpose}, {p.purpose}")
    return list(merged.values()), unresolved


def unsupported_message(what: str) -> str:
    return (f"edgebench provisions Debian, Ubuntu and Raspberry Pi OS with apt-get; {what} is none of "
            f"them. Install these with its package manager, then run `make provision CHECK=1` to see what "
            f"is still missing: {', '.join(BY_HAND)}. ops (Nanos): curl {OPS_INSTALLER} -sSfL | sh")


@dataclass
class PackageState:
    package: Package
    installed: str | None = None   # dpkg's version; None = not installed
    on_path: str | None = None     # what runs it, when present without the package
    candidate: str | None = None   # apt's candidate version; None = not in the repositories
    conflict: str | None = None    # an installed package that rules this one out
    client_only: str | None = None  # the client's path, when it is there without what runs it

    @property
    def present(self) -> bool:
        return self.installed is not None or self.on_path is not None

    @property
    def note(self) -> str | None:
        """Why a half-present part is planned (or cannot be), for the table."""
        p = self.package
        if self.present or not (self.client_only or self.conflict):
            return None
        needed = ", ".join(p.runs_with[0]) if p.runs_with else p.name
        what = (f"{p.client} at {self.client_only} is a client without what runs it (no {needed})"
                if self.client_only else f"no {needed}")
        if self.conflict:
            return (f"{what}; {p.name} would replace the installed {self.conflict} (they conflict), so it "
                    f"is not installed: complete that packaging (e.g. Docker CE's docker-ce, containerd.io "
                    f"from Docker's repository), or remove {self.conflict} and run `make provision` again")
        return f"{what}: {p.name} brings it"


@dataclass
class Plan:
    family: str
    arch: str
    states: list[PackageState]
    unresolved: dict[str, str] = field(default_factory=dict)
    installed: dict[str, str] = field(default_factory=dict)  # what dpkg said, conflicting packagings too

    @property
    def present(self) -> list[PackageState]:
        return [s for s in self.states if s.present]

    @property
    def to_install(self) -> list[str]:
        return [s.package.name for s in self.states if not s.present and s.candidate and not s.conflict]

    @property
    def unavailable(self) -> dict[str, str]:
        """Missing packages the repositories do not carry, or that conflict, with the reason."""
        out = {}
        for s in self.states:
            if s.present:
                continue
            if s.conflict:
                out[s.package.name] = f"not installed (needed for {s.package.purpose}): {s.note}"
            elif not s.candidate:
                out[s.package.name] = (f"not in the target's {self.family} repositories (needed for "
                                       f"{s.package.purpose})")
        return out

    @property
    def notes(self) -> list[str]:
        return [s.note for s in self.states if s.note]

    @property
    def missing(self) -> list[str]:
        return [s.package.name for s in self.states if not s.present]


def runs_here(package: Package, on_path: dict[str, str]) -> str | None:
    """The path of what runs the package, when one of its groups of commands is all on PATH."""
    for group in package.runs_with:
        if all(c in on_path for c in group):
            return on_path[group[0]]
    return None


def make_plan(family: str, arch: str, packages: list[Package], installed: dict[str, str],
              on_path: dict[str, str], candidates: dict[str, str | None],
              unresolved: dict[str, str] | None = None) -> Plan:
    """Pure: what is present, what to install, what is not available. `installed` holds every
    installed package dpkg was asked about, conflicting packagings included."""
    states = []
    for p in packages:
        runs = None if p.name in installed else runs_here(p, on_path)
        conflict = next((c for c in p.conflicts if c in installed), None)
        client = on_path.get(p.client) if p.client and p.name not in installed and not runs else None
        states.append(PackageState(p, installed.get(p.name), runs, candidates.get(p.name), conflict, client))
    return Plan(family, arch, states, dict(unresolved or {}), dict(installed))


def install_argv(packages: list[str], sudo: list[str] | None = None) -> list[str]:
    """apt-get install, non-interactive, keeping the device's own config files, waiting for a
    running apt (unattended-upgrades on a Pi) instead of failing on its lock."""
    return [*(sudo or []), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
            "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300",
            "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold", *packages]


def update_argv(sudo: list[str] | None = None) -> list[str]:
    return [*(sudo or []), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "update", "-q",
            "-o", "DPkg::Lock::Timeout=300"]


def parse_kv(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_dpkg_query(text: str) -> dict[str, str]:
    """`dpkg-query -W -f='${Package}\\t${db:Status-Abbrev}\\t${Version}\\n'` -> installed name: version."""
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].strip()[:2] in ("ii", "hi"):
            out[parts[0].split(":")[0]] = parts[2].strip()
    return out


def parse_apt_policy(text: str) -> dict[str, str | None]:
    """`apt-cache policy P...` -> name: candidate version (None for "(none)"). Packages apt does
    not know at all are absent."""
    out: dict[str, str | None] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^(\S+):$", line)
        if m:
            name = m.group(1).split(":")[0]
            continue
        m = re.match(r"^\s+Candidate:\s*(\S+)", line)
        if m and name:
            out[name] = None if m.group(1) == "(none)" else m.group(1)
    return out


_VERSION_RE = re.compile(r"\d+\.\d+[\w.+~:-]*")


def short_version(line: str) -> str:
    """The version in a tool's first line ('OpenSSL 3.0.19 27 Jan ...' -> 3.0.19)."""
    m = _VERSION_RE.search(line)
    return m.group(0).rstrip(".,;") if m else line.strip()[:60]


# -- on the target ------------------------------------------------------------------------

_PATH = 'export PATH="$PATH:/usr/sbin:/sbin:/usr/local/sbin:/snap/bin:$HOME/.ops/bin"'

# One round trip: the distribution, PID 1, privileges, apt's state and which commands exist.
_SURVEY = _PATH + r"""
stamp=$1; shift
. /etc/os-release 2>/dev/null
echo "os_id=${ID:-}"
echo "os_like=${ID_LIKE:-}"
echo "os_name=${PRETTY_NAME:-}"
echo "apt_get=$(command -v apt-get)"
echo "pid1=$(cat /proc/1/comm 2>/dev/null)"
if [ "$(id -u)" = 0 ]; then echo "privilege=root"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then echo "privilege=sudo"
else echo "privilege=none"; fi
echo "apt_lists=$(ls /var/lib/apt/lists 2>/dev/null | grep -c '_Packages')"
[ -f "$stamp" ] && echo "apt_update_age_s=$(( $(date +%s) - $(stat -c %Y "$stamp") ))"
for c in "$@"; do p=$(command -v "$c" 2>/dev/null) && echo "cmd:$c=$p"; done
true
"""

# name<TAB>exit code or "absent"<TAB>path<TAB>first non-empty output line
_VERSIONS = _PATH + r"""
v() {
  name=$1; shift
  p=$(command -v "$1" 2>/dev/null) || { printf '%s\tabsent\t\t\n' "$name"; return; }
  if command -v timeout >/dev/null 2>&1; then out=$(timeout 20 "$@" 2>&1 </dev/null); rc=$?
  else out=$("$@" 2>&1 </dev/null); rc=$?; fi
  first=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | head -n 1 | tr '\t' ' ')
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$p" "$first"
}
"""


@dataclass
class ToolState:
    name: str
    ok: bool
    version: str = ""
    path: str = ""
    detail: str = ""   # why it is missing


def parse_versions(text: str, tools: list[Tool]) -> dict[str, ToolState]:
    by_name = {t.name: t for t in tools}
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or parts[0] not in by_name:
            continue
        name, rc, path, first = parts[0], parts[1], parts[2], parts[3]
        if rc == "absent":
            out[name] = ToolState(name, False, detail="not installed")
        elif rc == "0" or by_name[name].any_exit:
            out[name] = ToolState(name, True, short_version(first), path)
        else:
            out[name] = ToolState(name, False, path=path, detail=f"`{name}` fails (exit {rc}): {first[:120]}")
    for t in tools:
        out.setdefault(t.name, ToolState(t.name, False, detail="not checked"))
    return out


@dataclass
class Row:
    kind: str      # runtime | tool
    name: str
    ok: bool
    detail: str

    @property
    def status(self) -> str:
        return "ok" if self.ok else "missing"


@dataclass
class Report:
    target: str
    os_name: str = ""
    arch: str = ""
    check: bool = False
    already_installed: list[str] = field(default_factory=list)
    installed_now: list[str] = field(default_factory=list)
    would_install: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)     # package or step -> reason
    actions: list[str] = field(default_factory=list)          # what was (or would be) done
    notes: list[str] = field(default_factory=list)            # half-present parts and what is done about them
    rows: list[Row] = field(default_factory=list)
    steps_s: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    unprivileged: bool = False  # before a run without root: only looked

    def brief(self) -> str:
        """Before a run: only what was done and what is still missing, then the summary."""
        lines = [f"{r.kind} {r.name}: {r.detail}" for r in self.rows if not r.ok]
        lines += [f"{name}: {why}" for name, why in {**self.unavailable, **self.failed}.items()]
        lines += [f"note: {n}" for n in self.notes]
        if self.actions:
            lines.append(("would do (needs root): " if self.check else "done: ") + "; ".join(self.actions))
        lines.append(self.summary())
        return "\n".join(f"[provision] {line}" for line in lines)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        if self.check:
            todo = f"{len(self.would_install)} to install" + (
                f" ({' '.join(self.would_install)})" if self.would_install else "")
        else:
            todo = f"{len(self.installed_now)} installed now" + (
                f" ({' '.join(self.installed_now)})" if self.installed_now else "")
        return (f"packages: {len(self.already_installed)} already installed, {todo}, "
                f"{len(self.unavailable)} not available, {len(self.failed)} failed; "
                f"{self.elapsed_s:.1f} s")

    def table(self) -> str:
        head = f"edgebench provision{' --check' if self.check else ''} on {self.target}"
        if self.os_name:
            head += f" ({self.os_name}, {self.arch})"
        width = max([len(r.name) for r in self.rows] + [8])
        lines = [head, f"{'kind':<8} {'name':<{width}} {'status':<8} detail"]
        lines += [f"{r.kind:<8} {r.name:<{width}} {r.status:<8} {r.detail}" for r in self.rows]
        for name, why in self.unavailable.items():
            lines.append(f"{'package':<8} {name:<{width}} {'n/a':<8} {why}")
        for name, why in self.failed.items():
            lines.append(f"{'failed':<8} {name:<{width}} {'error':<8} {why}")
        lines += [f"note: {n}" for n in self.notes]
        if self.actions:
            lines.append(("would do: " if self.check else "done: ") + "; ".join(self.actions))
        lines.append(self.summary())
        return "\n".join(lines)


def _tail(text: str, n: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-n:]) or "no output"


class Provisioner:
    """Runs the plan on one target. `run()` returns the Report; `--check` changes nothing."""

    def __init__(self, target: Target, check: bool = False, log: Callable[[str], None] | None = None,
                 for_tests: bool = False, before_run: bool = False):
        self.target = target
        self.before_run = before_run
        self.check = check
        self.for_tests = for_tests
        self.log = log or (lambda msg: print(f"[provision] {msg}", file=sys.stderr, flush=True))
        self.sudo: list[str] = []
        self.survey: dict[str, str] = {}
        self.commands: dict[str, str] = {}
        self.report = Report(target.name, check=check)
        self.ops_note = ""
        self.ops_short = ""   # the same, for the nanos row

    # -- reading the target ------------------------------------------------------------
    @property
    def stamp(self) -> str:
        return f"{self.target.workspace}/provision/apt-update.stamp"

    def read_survey(self, commands: list[str]) -> dict[str, str]:
        r = self.target.run(["sh", "-c", _SURVEY, "survey", self.stamp, *commands], timeout=60)
        kv = parse_kv(r.stdout)
        self.commands = {k[4:]: v for k, v in kv.items() if k.startswith("cmd:")}
        self.survey = {k: v for k, v in kv.items() if not k.startswith("cmd:")}
        return self.survey

    def dpkg_installed(self, names: list[str]) -> dict[str, str]:
        fmt = "${Package}\t${db:Status-Abbrev}\t${Version}\n"
        r = self.target.run(["dpkg-query", "-W", f"-f={fmt}", *names], check=False, timeout=60)
        return parse_dpkg_query(r.stdout)

    def apt_candidates(self, names: list[str]) -> dict[str, str | None]:
        if not names:
            return {}
        r = self.target.run(["apt-cache", "policy", *names], check=False, timeout=120)
        return parse_apt_policy(r.stdout)

    def tool_states(self, tools: list[Tool]) -> dict[str, ToolState]:
        script = _VERSIONS + "\n".join(sh(["v", t.name, *t.argv]) for t in tools) + "\n"
        r = self.target.run(["sh", "-c", script], check=False, timeout=300)
        return parse_versions(r.stdout, tools)

    def compute_plan(self) -> Plan:
        facts = self.target.facts()
        family = os_family(self.survey)
        if family is None or not self.survey.get("apt_get"):
            name = self.survey.get("os_name") or self.survey.get("os_id") or "this system"
            raise UnsupportedTarget(unsupported_message(f"{self.target.name} ({name})"))
        packages, unresolved = packages_for(family, facts["arch"], facts.get("kernel") or "", self.for_tests)
        names = sorted({p.name for p in packages} | {c for p in packages for c in p.conflicts})
        installed = self.dpkg_installed(names)
        missing = [p.name for p in packages if p.name not in installed]
        plan = make_plan(family, facts["arch"], packages, installed, self.commands,
                         self.apt_candidates(missing), unresolved)
        return plan

    # -- steps ---------------------------------------------------------------------------
    def timed(self, name: str, fn, *args):
        t0 = time.monotonic()
        try:
            return fn(*args)
        finally:
            self.report.steps_s[name] = round(time.monotonic() - t0, 2)

    def run(self) -> Report:
        t0 = time.monotonic()
        rep = self.report
        facts = self.target.facts()
        rep.arch = facts.get("arch") or ""
        self.read_survey(SURVEY_COMMANDS)
        rep.os_name = self.survey.get("os_name", "")
        plan = self.compute_plan()  # raises UnsupportedTarget before anything changes
        privilege = self.survey.get("privilege")
        if privilege == "sudo":
            self.sudo = ["sudo", "-n"]
        elif privilege != "root" and not self.check:
            user = facts.get("user") or "this user"
            why = (f"provisioning {self.target.name} needs root (it installs packages and starts daemons), "
                   f"and {user} has neither uid 0 nor passwordless sudo (`sudo -n true` failed). Connect as "
                   f"root (TARGET=root@host), or allow it: `{user} ALL=(ALL) NOPASSWD: ALL` in "
                   f"/etc/sudoers.d/edgebench (edit with visudo). `--check` works without.")
            if not self.before_run:
                raise ProvisionError(why)
            # Before `make figures`/`make test`: say what is missing, change nothing, let the run go on.
            self.log(why)
            self.check = rep.check = True
            rep.unprivileged = True

        plan = self.timed("packages", self.packages, plan)
        self.timed("docker", self.docker)
        self.timed("lxd", self.lxd)
        self.timed("ops", self.ops)
        self.timed("table", self.table, plan)
        rep.elapsed_s = time.monotonic() - t0
        return rep

    def packages(self, plan: Plan) -> Plan:
        rep = self.report
        rep.already_installed = [s.package.name for s in plan.present]
        rep.notes = plan.notes
        for note in rep.notes:
            self.log(note)
        rep.unavailable = dict(plan.unavailable)
        for logical, why in plan.unresolved.items():
            rep.unavailable[logical] = why
        missing = plan.missing
        if not missing:
            self.log(f"all {len(plan.states)} packages are installed")
            return plan
        lists_fresh = (int(self.survey.get("apt_lists") or 0) > 0 and
                       int(self.survey.get("apt_update_age_s") or APT_UPDATE_MAX_AGE_S + 1) < APT_UPDATE_MAX_AGE_S)
        # Before installing, refresh the lists (a stale list installs versions the mirror dropped);
        # when only unavailable packages are missing, ask the mirror again at most once a day.
        need_update = bool(plan.to_install) or not lists_fresh
        if self.check:
            if need_update:
                rep.actions.append("apt-get update")
            rep.would_install = plan.to_install
            if plan.to_install:
                rep.actions.append("apt-get install " + " ".join(plan.to_install))
            return plan
        if need_update:
            self.log("apt-get update")
            r = self.target.run(update_argv(self.sudo), timeout=900, check=False)
            if r.ok:
                self.target.run(f"mkdir -p {shlex.quote(self.stamp.rsplit('/', 1)[0])} && "
                                f"touch {shlex.quote(self.stamp)}", check=False)
            else:
                rep.failed["apt-get update"] = _tail(r.stderr)
            rep.actions.append("apt-get update")
            plan = make_plan(plan.family, plan.arch, [s.package for s in plan.states], plan.installed,
                             self.commands, self.apt_candidates(missing), plan.unresolved)
            rep.unavailable = {**plan.unavailable, **plan.unresolved}
        todo = plan.to_install
        if todo:
            self.log("apt-get install " + " ".join(todo))
            rep.actions.append("apt-get install " + " ".join(todo))
            r = self.target.run(install_argv(todo, self.sudo), timeout=3600, check=False)
            if not r.ok and len(todo) > 1:
                # One bad package must not keep the others out: retry them one by one.
                self.log(f"apt-get install failed ({_tail(r.stderr, 1)}); retrying one package at a time")
                for name in todo:
                    one = self.target.run(install_argv([name], self.sudo), timeout=1800, check=False)
                    if not one.ok:
                        rep.failed[name] = f"apt-get install failed: {_tail(one.stderr)}"
            elif not r.ok:
                rep.failed[todo[0]] = f"apt-get install failed: {_tail(r.stderr)}"
            now = self.dpkg_installed(todo)
            rep.installed_now = [n for n in todo if n in now]
            for n in todo:
                if n not in now and n not in rep.failed:
                    rep.failed[n] = "apt-get reported success but dpkg does not list it as installed"
            self.read_survey(SURVEY_COMMANDS)
        return plan

    def _docker_answers(self) -> bool:
        return self.target.run([*self.sudo, "docker", "version", "--format", "{{.Server.Version}}"],
                               timeout=20, check=False).ok

    def docker(self) -> None:
        if "docker" not in self.commands:
            self.log("no docker CLI: the Docker daemon is not started")
            return
        if self._docker_answers():
            return
        planned = self.check and "docker.io" in self.report.would_install
        if "dockerd" not in self.commands and not planned:  # a client alone (the plan says why)
            self.log("a docker CLI but no dockerd: the Docker daemon cannot be started")
            return
        systemd = self.survey.get("pid1") == "systemd"
        how = "systemctl start docker" if systemd else "dockerd in the background"
        if self.check:
            self.report.actions.append(f"start the Docker daemon ({how})")
            return
        self.log(f"starting the Docker daemon ({how})")
        self.report.actions.append(f"started the Docker daemon ({how})")
        log = f"{self.target.workspace}/dockerd.log"
        if systemd:
            r = self.target.run([*self.sudo, "systemctl", "start", "docker"], timeout=120, check=False)
            if not r.ok:
                self.report.failed["docker daemon"] = f"systemctl start docker failed: {_tail(r.stderr)}"
                return
        else:
            self.target.run(["mkdir", "-p", self.target.workspace])
            # Own session and no open pipes: it outlives this command (and the SSH session).
            self.target.run([*self.sudo, "sh", "-c", 'PATH="$PATH:/usr/sbin:/sbin"; '
                             'setsid nohup dockerd >>"$1" 2>&1 </dev/null &',
                             "start-dockerd", log], timeout=30)
        deadline = time.monotonic() + DOCKER_WAIT_S
        while time.monotonic() < deadline:
            if self._docker_answers():
                return
            time.sleep(1)
        tail = "" if systemd else _tail(self.target.read_text(log, missing_ok=True) or "", 5)
        self.report.failed["docker daemon"] = (f"started, but `docker version` gets no answer after "
                                               f"{DOCKER_WAIT_S} s{'; ' + log + ': ' + tail if tail else ''}")

    def lxd(self) -> None:
        if "lxd" not in self.commands:
            self.log("no lxd: LXD is not set up")
            return
        if self.check:
            self.report.actions.append("tools/lxd/setup.sh (daemon, pool, bridge; idempotent) and the LXD "
                                       "base image (debootstrap, cached)")
            return
        script = TOOLS_DIR / "lxd" / "setup.sh"
        remote = self.target.upload_if_changed(script, f"{self.target.workspace}/bin/lxd-setup.sh", mode="755")
        self.log("tools/lxd/setup.sh")
        r = self.target.run([*self.sudo, "sh", remote], timeout=900, check=False)
        for line in r.stdout.strip().splitlines():
            self.log(f"  {line}")
        if not r.ok:
            self.report.failed["lxd setup"] = (f"tools/lxd/setup.sh exited {r.exit_code}: "
                                               f"{_tail(r.stderr + r.stdout)}")
            return
        try:
            from edgebench.lxd_image import ensure_image
        except ImportError as e:  # the LXD runtime's image module is not in this version
            self.log(f"no LXD base image step ({e})")
            return
        self.log("LXD base image (debootstrap once, cached on the target)")
        try:
            image = ensure_image(self.target)
        except EdgebenchError as e:
            self.report.failed["lxd image"] = str(e).strip().splitlines()[0][:300]
            return
        if image.built or image.imported:
            self.report.actions.append(f"LXD image {image.alias} {'built' if image.built else ''}"
                                       f"{' and ' if image.built and image.imported else ''}"
                                       f"{'imported' if image.imported else ''}")

    def _ops_path(self) -> str | None:
        return self.commands.get("ops")

    def ops(self) -> None:
        if self._ops_path():
            return
        if "curl" not in self.commands:
            self.ops_note = "not installed (no curl to fetch its installer)"
            return
        r = self.target.run(["curl", "-sfI", "--max-time", str(OPS_REACH_TIMEOUT_S), OPS_INSTALLER],
                            timeout=OPS_REACH_TIMEOUT_S + 10, check=False)
        if not r.ok:
            self.ops_note = (f"not installed: {OPS_INSTALLER} is unreachable from {self.target.name} "
                             f"(no internet; curl exit {r.exit_code}); install by hand where it is: "
                             f"curl {OPS_INSTALLER} -sSfL | sh")
            self.ops_short = "no internet to fetch its installer"
            return
        if self.check:
            self.report.actions.append(f"install ops ({OPS_INSTALLER})")
            self.ops_note = "not installed; would install with its official installer"
            return
        self.log(f"installing ops with {OPS_INSTALLER}")
        self.report.actions.append(f"installed ops ({OPS_INSTALLER})")
        # As the user (it installs into ~/.ops); its kvm-group question gets the default answer.
        inst = self.target.run(["sh", "-c", 'curl -sSfL "$1" | sh', "ops-install", OPS_INSTALLER],
                               timeout=900, check=False, stdin="")
        self.read_survey(SURVEY_COMMANDS)
        if not self._ops_path():
            self.report.failed["ops"] = ("the installer did not leave ops on PATH or in ~/.ops/bin: "
                                         f"{_tail(inst.stdout + inst.stderr)}")

    # -- the table ---------------------------------------------------------------------------
    def table(self, plan: Plan) -> None:
        facts = self.target.facts(refresh=not self.check)
        tools = tools_for(facts["arch"])
        states = self.tool_states(tools)
        from edgebench.runtimes import RUNTIMES
        rows = [self.runtime_row(name, facts, states) for name in RUNTIMES]
        for t in tools:
            s = states[t.name]
            if s.ok:
                rows.append(Row("tool", t.name, True, s.version))
            else:
                rows.append(Row("tool", t.name, False, self.missing_tool_reason(t.name, s, plan)))
        self.report.rows = rows

    def missing_tool_reason(self, name: str, state: ToolState, plan: Plan) -> str:
        if name == "ops":
            return self.ops_note or state.detail
        for s in plan.states:
            cmd = s.package.command or ("perf" if s.package.name.startswith("linux-tools") else None)
            if cmd == name:
                pkg = s.package.name
                if pkg in self.report.failed:
                    return f"{state.detail}; {pkg}: {self.report.failed[pkg]}"
                if pkg in self.report.unavailable:
                    return f"{state.detail}; {pkg} is {self.report.unavailable[pkg]}"
                if self.check and pkg in self.report.would_install:
                    return f"{state.detail}; would install {pkg}"
                return f"{state.detail} (package {pkg})"
        return state.detail

    def runtime_row(self, name: str, facts: dict, tools: dict[str, ToolState]) -> Row:
        from edgebench.runtimes import RUNTIMES
        cls = RUNTIMES.get(name)
        if cls is None:
            if name == "lxd":
                r = self.target.run(["lxc", "query", "/1.0"], timeout=20, check=False)
                state = "LXD answers" if r.ok else "LXD does not answer"
                return Row("runtime", name, False, "not registered in edgebench.runtimes.RUNTIMES in this "
                           f"version of edgebench; {state}")
            return Row("runtime", name, False, "not in this version of edgebench")
        try:
            availability = cls(self.target).availability()
        except EdgebenchError as e:
            return Row("runtime", name, False, str(e).splitlines()[0])
        if not availability.ok:
            if name == "nanos":
                return Row("runtime", name, False, f"{availability.reason}; {self.nanos_parts(facts, tools)}")
            return Row("runtime", name, False, availability.reason)
        return Row("runtime", name, True, cls(self.target).describe())

    def nanos_parts(self, facts: dict, tools: dict[str, ToolState]) -> str:
        """What the nanos runtime needs, each with its state, for the table."""
        qemu = qemu_binary(facts["arch"])
        q, o = tools.get(qemu), tools.get("ops")
        ops = (f"ops {o.version}" if o and o.ok else
               f"ops missing ({self.ops_short or self.ops_note or (o.detail if o else '')})")
        qemu_s = f"{qemu} {q.version}" if q and q.ok else f"{qemu} missing"
        return f"{ops}; {qemu_s}; kvm: {facts.get('kvm') or 'unknown'}"


def provision(target: Target, check: bool = False, log: Callable[[str], None] | None = None,
              for_tests: bool = False, before_run: bool = False) -> Report:
    """Provision `target` (or only look, with check=True). Raises UnsupportedTarget or
    ProvisionError before changing anything when it cannot; with before_run=True, a target
    without root is only looked at (what is missing is reported, nothing is raised)."""
    return Provisioner(target, check=check, log=log, for_tests=for_tests, before_run=before_run).run()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="local", help="local, user@host[:port] or an ~/.ssh/config alias")
    ap.add_argument("--check", "--dry-run", action="store_true", dest="check",
                    help="change nothing: print the table and what would be installed or started")
    ap.add_argument("--accept-new-host-key", action="store_true",
                    help="trust an SSH host key not yet in known_hosts (like StrictHostKeyChecking=accept-new)")
    ap.add_argument("--for-tests", action="store_true",
                    help="also what `make test` needs (sshd for the test hosts in network namespaces)")
    ap.add_argument("--before-run", action="store_true",
                    help="as `make figures`/`make test` call it: print only what changed or is missing, "
                         "and go on (exit 0) when something cannot be installed or there is no root")
    args = ap.parse_args(argv)
    opts = {"accept_new_host_key": True} if args.accept_new_host_key else {}  # only SSH targets use it
    try:
        with connect(args.target, **opts) as target:
            report = provision(target, check=args.check, for_tests=args.for_tests, before_run=args.before_run)
    except UnsupportedTarget as e:
        print(f"edgebench provision: {e}", file=sys.stderr)
        return 0 if args.before_run else 2  # the run goes on with what the target has
    except ProvisionError as e:
        print(f"edgebench provision: {e}", file=sys.stderr)
        return 2
    except EdgebenchError as e:  # an unreachable target: nothing after this could work either
        print(f"edgebench provision failed: {e}", file=sys.stderr)
        return 1
    if args.before_run:
        print(report.brief(), file=sys.stderr)
        if not report.ok:
            print("[provision] going on with what is there: experiments skip a runtime they cannot use, "
                  "with the reason", file=sys.stderr)
        return 0
    print(report.table())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
