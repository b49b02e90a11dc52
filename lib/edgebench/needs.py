"""What each part of edgebench needs on a target, as data the rest iterates.

A runtime declares its own (`Runtime.target_needs(arch)`: packages and what runs them, the
versions to report, facts to show, how to start what must run); the experiments' tools are
declared here (`TOOL_NEEDS`). `make provision` installs and starts from these, the provisioning
table has a row per part, and every run's meta.json records the versions (`tool_versions`).
Adding a runtime adds nothing here.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from edgebench.targets import Target


@dataclass(frozen=True)
class Need:
    """A Debian-family package, and what it takes to *run* what it brings."""
    package: str
    # Any one of these groups of commands, all on PATH, satisfies the need without the package
    # (Docker CE, LXD from snap, node from nvm must not be replaced). A client alone is not
    # enough: the docker CLI without dockerd, containerd and runc cannot run a container.
    runs_with: tuple[tuple[str, ...], ...] = ()
    client: str | None = None        # a command that may be present without what runs it
    conflicts: tuple[str, ...] = ()  # installed packages that rule the package out (apt would remove them)
    # The system service the package starts and enables on install (redis-server): edgebench starts
    # the program itself, so where it installed the package it stops and disables that service.
    daemon: str = ""


@dataclass(frozen=True)
class Version:
    """A program whose version a run records, and how to ask it (first non-empty output line)."""
    name: str
    argv: tuple[str, ...]
    any_exit: bool = False  # `wrk --version` prints its version and exits 1
    recorded_only: bool = False  # in meta.json, not a row of the provisioning table (nothing installs it)


@dataclass(frozen=True)
class TargetNeeds:
    purpose: str
    packages: tuple[Need, ...] = ()
    versions: tuple[Version, ...] = ()
    by_hand: tuple[str, ...] = ()  # what to install on a target without apt-get
    # A part that has no package on this architecture: (name, why).
    unresolved: tuple[tuple[str, str], ...] = ()
    facts: tuple[str, ...] = ()    # Target.facts() keys the provisioning row shows (e.g. kvm)
    # Installs what no package provides (after the packages); `make test` skips it when False.
    prepare: Callable[["Preparation"], None] | None = None
    prepare_for_tests: bool = True


def _tool(purpose: str, package: str, command: str, version_argv: tuple[str, ...], any_exit: bool = False,
          by_hand: str | None = None, daemon: str = "") -> TargetNeeds:
    return TargetNeeds(purpose, (Need(package, ((command,),), daemon=daemon),),
                       (Version(command, version_argv, any_exit),), (by_hand or package,))


# NPB's row in the provisioning table: the version `npb.install` wrote beside the binaries
# (EDGEBENCH_NPB_DIR: binaries built elsewhere).
NPB_VERSION_CHECK = ("sh", "-c", 'd="${EDGEBENCH_NPB_DIR:-$HOME/.cache/edgebench/npb/bin}"; '
                                 'ls "$d"/*.x >/dev/null 2>&1 || { echo "no NPB binaries in $d"; exit 1; }; '
                                 'cat "$d/VERSION" 2>/dev/null || echo "NPB3.4-OMP binaries in $d"')

# IOZone's row: the version of whichever iozone a run would use, the target's or the one
# provisioning unpacked into the workspace (edgebench.iozone.unpacked).
IOZONE_VERSION_CHECK = ("sh", "-c", 'x=$(command -v iozone || echo "$HOME/.cache/edgebench/iozone/root/usr/bin/iozone"); '
                                    '"$x" -v 2>/dev/null | sed -n "s/.*Version \\$Revision: *\\([0-9.]*\\).*/iozone \\1/p" '
                                    '| grep . || { echo "no iozone"; exit 1; }')

# What the experiments run besides the runtimes (load generators, baselines, comparisons).
TOOL_NEEDS: tuple[TargetNeeds, ...] = (
    _tool("http load (wrk)", "wrk", "wrk", ("wrk", "--version"), any_exit=True),
    _tool("cpu baseline", "sysbench", "sysbench", ("sysbench", "--version")),
    _tool("network baseline", "iperf3", "iperf3", ("iperf3", "--version")),
    # Debian's name; provisioning maps it to linux-tools-<kernel> on Ubuntu.
    _tool("counters (perf stat)", "linux-perf", "perf", ("perf", "--version"), by_hand="perf (matching the kernel)"),
    TargetNeeds("iomt comparisons", (Need("ncompress", (("compress",),)), Need("openssl", (("openssl",),))),
                (Version("compress", ("compress", "-V")), Version("openssl", ("openssl", "version"))),
                ("ncompress (compress)", "openssl")),
    _tool("published protocol", "curl", "curl", ("curl", "--version")),
    _tool("node app", "nodejs", "node", ("node", "--version"), by_hand="Node.js (node)"),
    TargetNeeds("process and network tools", (Need("procps", (("ps",),)), Need("iproute2", (("ip",),))),
                by_hand=("procps", "iproute2")),
    # The open-loop curves prefer oha; a 6-minute cargo build, so `make figures` does it and
    # `make test` does not (the built-in tools/openloop serves meanwhile).
    TargetNeeds("open-loop http load (oha)", versions=(Version("oha", ("oha", "--version")),),
                by_hand=("oha (cargo install oha)",), prepare=lambda prep: _install_oha(prep),
                prepare_for_tests=False),
    # Container overhead (paper 003): fio for the disk, ab for HTTP, a C compiler for STREAM
    # (apps/stream is compiled on the target), stress-ng to cross-check STREAM's rates.
    _tool("disk benchmark (fio)", "fio", "fio", ("fio", "--version")),
    # The published disk runs: IOZone, from Debian's non-free without enabling it (edgebench.iozone).
    TargetNeeds("disk benchmark, published (IOZone)", versions=(Version("iozone", IOZONE_VERSION_CHECK),),
                by_hand=("iozone3 (Debian non-free, Ubuntu multiverse; make provision fetches it)",),
                prepare=lambda prep: _install_iozone(prep)),
    _tool("http benchmark (ab)", "apache2-utils", "ab", ("ab", "-V"), by_hand="apache2-utils (ab)"),
    _tool("c programs (STREAM)", "gcc", "cc", ("cc", "--version"), by_hand="gcc (cc)"),
    _tool("memory cross-check", "stress-ng", "stress-ng", ("stress-ng", "--version")),
    # Off-the-shelf services (paper 002): Debian's Redis, and its benchmark on the load generator.
    _tool("nginx service", "nginx", "nginx", ("nginx", "-v"), daemon="nginx"),
    _tool("redis service", "redis-server", "redis-server", ("redis-server", "--version"), daemon="redis-server"),
    # First starts (time to ready): the registry a device pulls a missing image from (paper 001).
    _tool("image registry", "docker-registry", "docker-registry", ("docker-registry", "--version"),
          daemon="docker-registry"),
    _tool("redis load (redis-benchmark)", "redis-tools", "redis-benchmark", ("redis-benchmark", "--version")),
    # NPB: built from NASA's sources on the target (minutes), so `make figures` does it and
    # `make test` does not; without it the HPC rows are missing with the reason.
    # make: NPB's build runs it, and a fresh Debian device has none (seen on the emulated debian-v2).
    TargetNeeds("hpc (NAS Parallel Benchmarks)", (Need("gfortran", (("gfortran",),)), Need("make", (("make",),))),
                versions=(Version("npb", NPB_VERSION_CHECK),),
                by_hand=("gfortran; NPB (make provision builds it where nas.nasa.gov answers, or set "
                         "EDGEBENCH_NPB_DIR)",),
                prepare=lambda prep: _install_npb(prep), prepare_for_tests=False),
    # Go builds on the controlling machine; a target's own Go is only recorded.
    TargetNeeds("go on the target (recorded only)", versions=(Version("go", ("go", "version"), recorded_only=True),)),
)
def _install_npb(prep: "Preparation") -> None:
    from edgebench import npb
    npb.install(prep)


def _install_iozone(prep: "Preparation") -> None:
    from edgebench import iozone  # iozone reads the target's apt sources through lxd_image
    iozone.install(prep)


def _install_oha(prep: "Preparation") -> None:
    from edgebench.load import Oha  # load imports targets, which imports nothing of this module
    Oha.install(prep)


# Only for `make test` (--for-tests): the second "hosts" of the SSH tests run their own sshd, and
# `make report`'s pages are checked in a real headless browser.
TEST_NEEDS = (
    TargetNeeds("ssh test hosts (make test)", (Need("openssh-server", (("sshd",),)),)),
    # The cgroup v2 tests build and boot the emulated device debian-v2 (QEMU comes with linux-vm).
    TargetNeeds("emulated device for the cgroup v2 tests (make test)", (Need("mmdebstrap", (("mmdebstrap",),)),)),
    TargetNeeds("headless browser for the report test (make test)",
                (Need("chromium", (("chromium",),)),), (Version("chromium", ("chromium", "--version")),)),
)


def runtime_needs(arch: str) -> dict[str, TargetNeeds]:
    """Every registered runtime's needs on this architecture, in the registry's order."""
    from edgebench.runtimes import RUNTIMES  # the runtimes import this module's types
    return {name: cls.target_needs(arch) for name, cls in RUNTIMES.items()}


def all_needs(arch: str, for_tests: bool = False) -> list[TargetNeeds]:
    return [*runtime_needs(arch).values(), *TOOL_NEEDS, *(TEST_NEEDS if for_tests else ())]


def versions_for(arch: str) -> list[Version]:
    """The programs whose versions are recorded, each once: the tools', then the runtimes'."""
    seen: dict[str, Version] = {}
    for needs in [*TOOL_NEEDS, *runtime_needs(arch).values()]:
        for v in needs.versions:
            seen.setdefault(v.name, v)
    return list(seen.values())


def survey_commands(arch: str, for_tests: bool = False) -> list[str]:
    """Commands whose presence the survey reports: what runs each package, clients, versioned programs."""
    out = set()
    for part in all_needs(arch, for_tests):
        out |= {c for need in part.packages for group in need.runs_with for c in group}
        out |= {need.client for need in part.packages if need.client}
        out |= {v.argv[0] for v in part.versions}
    return sorted(out)


def table_versions(arch: str) -> list[Version]:
    """The programs the table has a row for (recorded-only ones are in meta.json only)."""
    return [v for v in versions_for(arch) if not v.recorded_only]


# -- asking the target ----------------------------------------------------------------------

PATH_EXTRA = 'export PATH="$PATH:/usr/sbin:/sbin:/usr/local/sbin:/snap/bin:$HOME/.ops/bin:$HOME/.cargo/bin"'

# name<TAB>exit code or "absent"<TAB>path<TAB>first non-empty output line
_VERSIONS = PATH_EXTRA + r"""
v() {
  name=$1; shift
  p=$(command -v "$1" 2>/dev/null) || { printf '%s\tabsent\t\t\n' "$name"; return; }
  if command -v timeout >/dev/null 2>&1; then out=$(timeout 90 "$@" 2>&1 </dev/null); rc=$?
  else out=$("$@" 2>&1 </dev/null); rc=$?; fi
  first=$(printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | head -n 1 | tr '\t' ' ')
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$p" "$first"
}
"""

_VERSION_RE = re.compile(r"\d+\.\d+[\w.+~:-]*")


def short_version(line: str) -> str:
    """The version in a tool's first line ('OpenSSL 3.0.19 27 Jan ...' -> 3.0.19)."""
    m = _VERSION_RE.search(line)
    return m.group(0).rstrip(".,;") if m else line.strip()[:60]


@dataclass
class VersionState:
    name: str
    ok: bool
    version: str = ""
    path: str = ""
    detail: str = ""   # why it is missing


def versions_script(versions: list[Version]) -> str:
    from edgebench.targets import sh
    return _VERSIONS + "\n".join(sh(["v", v.name, *v.argv]) for v in versions) + "\n"


def parse_versions(text: str, versions: list[Version]) -> dict[str, VersionState]:
    by_name = {v.name: v for v in versions}
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or parts[0] not in by_name:
            continue
        name, rc, path, first = parts[0], parts[1], parts[2], parts[3]
        if rc == "absent":
            out[name] = VersionState(name, False, detail="not installed")
        elif rc == "0" or by_name[name].any_exit:
            out[name] = VersionState(name, True, short_version(first), path)
        else:
            why = "gave no version within 90 s" if rc == "124" else f"fails (exit {rc})"
            out[name] = VersionState(name, False, path=path, detail=f"`{name}` {why}: {first[:120]}")
    for v in versions:
        out.setdefault(v.name, VersionState(v.name, False, detail="not checked"))
    return out


def version_states(target: Target, versions: list[Version]) -> dict[str, VersionState]:
    # 90 s a program, 900 s in all: a 50 MB dockerd answering --version on an emulated aarch64
    # board under load took more than the 20 s it had (seen on pi-arm64).
    r = target.run(["sh", "-c", versions_script(versions)], check=False, timeout=900)
    return parse_versions(r.stdout, versions)


_RECORDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tool_versions(target: Target) -> dict[str, str | None]:
    """What meta.json records: every declared program's version on the target, None where it is
    missing. Asked once per target object (one round trip)."""
    if target not in _RECORDED:
        states = version_states(target, versions_for(target.facts()["arch"]))
        _RECORDED[target] = {name: (s.version if s.ok else None) for name, s in states.items()}
    return dict(_RECORDED[target])


# -- starting what must run -----------------------------------------------------------------

@dataclass
class Preparation:
    """What `make provision` hands a runtime's `prepare_target`: the target, how to act on it,
    and where to say what was done, what failed and why a part is missing."""
    target: Target
    check: bool                               # only say what would be done
    sudo: list[str]
    commands: dict[str, str]                  # command -> path on the target (after installing)
    survey: dict[str, str]                    # pid1, privilege, ...
    planned: list[str]                        # packages --check would install
    log: Callable[[str], None]
    rescan: Callable[[], None]                # re-read `commands` after installing something
    actions: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # part -> why it is still missing (table)

    @property
    def systemd(self) -> bool:
        return self.survey.get("pid1") == "systemd"

    def did(self, action: str) -> None:
        self.actions.append(action)

    def fail(self, step: str, why: str) -> None:
        self.failures[step] = why

    def would(self, action: str, part: str, missing: str) -> None:
        """--check: say what would be done, and that `part` is missing until it is."""
        self.did(action)
        self.missing[part] = missing


def tail(text: str, n: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-n:]) or "no output"
