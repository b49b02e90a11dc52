"""Every part edgebench needs on a target, as data the rest iterates: the runtimes' own
declarations (`Runtime.target_needs(arch)`), the experiments' tools (`TOOL_NEEDS`) and what only
`make test` needs (`TEST_NEEDS`). `make provision` installs and starts from these, the
provisioning table has a row per part, and every run's meta.json records the versions
(`tool_versions`). Adding a runtime adds nothing here.
"""

from __future__ import annotations

import weakref

from edgebench.provisioning.needs import Need, TargetNeeds, Version, version_states
from edgebench.runtimes import RUNTIMES
from edgebench.targets import Target
from edgebench.tools import iozone, npb
from edgebench.tools.open_loop import Oha


def _tool(purpose: str, package: str, command: str, version_argv: tuple[str, ...], any_exit: bool = False,
          by_hand: str | None = None, daemon: str = "", on_load_generator: bool = False) -> TargetNeeds:
    return TargetNeeds(purpose, (Need(package, ((command,),), daemon=daemon),),
                       (Version(command, version_argv, any_exit),), (by_hand or package,),
                       on_load_generator=on_load_generator)


# NPB's row in the provisioning table: the version `npb.install` wrote beside the binaries
# (EDGEBENCH_NPB_DIR: binaries built elsewhere).
NPB_VERSION_CHECK = ("sh", "-c", 'd="${EDGEBENCH_NPB_DIR:-$HOME/.cache/edgebench/npb/bin}"; '
                                 'ls "$d"/*.x >/dev/null 2>&1 || { echo "no NPB binaries in $d"; exit 1; }; '
                                 'cat "$d/VERSION" 2>/dev/null || echo "NPB3.4-OMP binaries in $d"')

# IOZone's row: the version of whichever iozone a run would use, the target's or the one
# provisioning unpacked into the workspace (edgebench.tools.iozone.unpacked).
IOZONE_VERSION_CHECK = ("sh", "-c", 'x=$(command -v iozone || '
                                    'echo "$HOME/.cache/edgebench/iozone/root/usr/bin/iozone"); '
                                    '"$x" -v 2>/dev/null '
                                    '| sed -n "s/.*Version \\$Revision: *\\([0-9.]*\\).*/iozone \\1/p" '
                                    '| grep . || { echo "no iozone"; exit 1; }')

# What the experiments run besides the runtimes (load generators, baselines, comparisons).
TOOL_NEEDS: tuple[TargetNeeds, ...] = (
    _tool("http load (wrk)", "wrk", "wrk", ("wrk", "--version"), any_exit=True, on_load_generator=True),
    _tool("cpu baseline", "sysbench", "sysbench", ("sysbench", "--version")),
    _tool("network baseline", "iperf3", "iperf3", ("iperf3", "--version"), on_load_generator=True),
    # Debian's name; provisioning maps it to linux-tools-<kernel> on Ubuntu.
    _tool("counters (perf stat)", "linux-perf", "perf", ("perf", "--version"), by_hand="perf (matching the kernel)"),
    TargetNeeds("iomt comparisons", (Need("ncompress", (("compress",),)), Need("openssl", (("openssl",),))),
                (Version("compress", ("compress", "-V")), Version("openssl", ("openssl", "version"))),
                ("ncompress (compress)", "openssl")),
    _tool("published protocol", "curl", "curl", ("curl", "--version"), on_load_generator=True),
    _tool("node app", "nodejs", "node", ("node", "--version"), by_hand="Node.js (node)"),
    TargetNeeds("process and network tools", (Need("procps", (("ps",),)), Need("iproute2", (("ip",),))),
                by_hand=("procps", "iproute2"), on_load_generator=True),
    # The open-loop curves prefer oha: a 6-minute cargo build, once. `make test` builds it too, so
    # that the path `make figures` takes is the one tested (the built-in tools/openloop is the
    # fallback where there is no cargo).
    TargetNeeds("open-loop http load (oha)", versions=(Version("oha", ("oha", "--version")),),
                by_hand=("oha (cargo install oha)",), prepare=Oha.install, on_load_generator=True),
    # Container overhead (paper 003): fio for the disk, ab for HTTP, a C compiler for STREAM
    # (apps/stream is compiled on the target), stress-ng to cross-check STREAM's rates.
    _tool("disk benchmark (fio)", "fio", "fio", ("fio", "--version")),
    # The published disk runs: IOZone, from Debian's non-free without enabling it (edgebench.tools.iozone).
    TargetNeeds("disk benchmark, published (IOZone)", versions=(Version("iozone", IOZONE_VERSION_CHECK),),
                by_hand=("iozone3 (Debian non-free, Ubuntu multiverse; make provision fetches it)",),
                prepare=iozone.install),
    _tool("http benchmark (ab)", "apache2-utils", "ab", ("ab", "-V"), by_hand="apache2-utils (ab)",
          on_load_generator=True),
    _tool("c programs (STREAM)", "gcc", "cc", ("cc", "--version"), by_hand="gcc (cc)"),
    _tool("memory cross-check", "stress-ng", "stress-ng", ("stress-ng", "--version")),
    # Off-the-shelf services (paper 002): Debian's Redis, and its benchmark on the load generator.
    _tool("nginx service", "nginx", "nginx", ("nginx", "-v"), daemon="nginx"),
    _tool("redis service", "redis-server", "redis-server", ("redis-server", "--version"), daemon="redis-server"),
    # First starts (time to ready): the registry a device pulls a missing image from (paper 001).
    _tool("image registry", "docker-registry", "docker-registry", ("docker-registry", "--version"),
          daemon="docker-registry", on_load_generator=True),
    _tool("redis load (redis-benchmark)", "redis-tools", "redis-benchmark", ("redis-benchmark", "--version"),
          on_load_generator=True),
    # NPB: built from NASA's sources on the target (minutes), so `make figures` does it; `make test`
    # builds class S from ../shared/npb into the tests' own cache (shared_fixtures). Without it the
    # HPC rows are missing with the reason.
    # make: NPB's build runs it, and a fresh Debian device has none (seen on the emulated debian-v2).
    TargetNeeds("hpc (NAS Parallel Benchmarks)", (Need("gfortran", (("gfortran",),)), Need("make", (("make",),))),
                versions=(Version("npb", NPB_VERSION_CHECK),),
                by_hand=("gfortran; NPB (make provision builds it where nas.nasa.gov answers, or set "
                         "EDGEBENCH_NPB_DIR)",),
                prepare=npb.install, prepare_for_tests=False),
    # Go builds on the controlling machine; a target's own Go is only recorded.
    TargetNeeds("go on the target (recorded only)", versions=(Version("go", ("go", "version"), recorded_only=True),)),
)
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


_RECORDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tool_versions(target: Target) -> dict[str, str | None]:
    """What meta.json records: every declared program's version on the target, None where it is
    missing. Asked once per target object (one round trip)."""
    if target not in _RECORDED:
        states = version_states(target, versions_for(target.facts()["arch"]))
        _RECORDED[target] = {name: (s.version if s.ok else None) for name, s in states.items()}
    return dict(_RECORDED[target])
