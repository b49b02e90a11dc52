"""The package side of provisioning, as data and pure functions: which Debian-family packages a
target needs (from every runtime's and tool's declared needs, `edgebench.provisioning.parts`), named for its
distribution and architecture; what is present, missing or not available (`make_plan`); and the
apt-get command lines. `edgebench.provisioning.provision` runs the plan on a target."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from edgebench.errors import EdgebenchError
from edgebench.provisioning.needs import Need, TargetNeeds
from edgebench.provisioning.parts import all_needs

FAMILIES = ("debian", "ubuntu", "raspbian")  # apt-based; raspbian = 32-bit Raspberry Pi OS


@dataclass(frozen=True)
class Package:
    need: Need
    purpose: str

    @property
    def name(self) -> str:
        return self.need.package

    @property
    def runs_with(self) -> tuple[tuple[str, ...], ...]:
        return self.need.runs_with

    @property
    def client(self) -> str | None:
        return self.need.client

    @property
    def conflicts(self) -> tuple[str, ...]:
        return self.need.conflicts

    @property
    def command(self) -> str | None:
        """The command a tool row of the table knows this package by."""
        if self.name.startswith("linux-tools"):
            return "perf"
        return self.runs_with[0][0] if self.runs_with else None


class UnsupportedTarget(EdgebenchError):
    """No package manager edgebench drives; the message lists what to install by hand."""


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


def for_family(need: Need, family: str, kernel: str) -> list[Need]:
    """The distribution's name for a need: perf on Ubuntu is a wrapper that needs the tools
    built for the running kernel."""
    if need.package == "linux-perf" and family == "ubuntu":
        return [Need("linux-tools-common"), *([Need(f"linux-tools-{kernel}")] if kernel else [])]
    return [need]


def packages_for(family: str, arch: str, kernel: str = "", for_tests: bool = False,
                 needs: list[TargetNeeds] | None = None) -> tuple[list[Package], dict[str, str]]:
    """The packages every part needs on this distribution and architecture, and the parts that
    have no package here (with the reason). A package two parts need appears once, with both
    purposes (the first part's way of running it)."""
    if family not in FAMILIES:
        raise UnsupportedTarget(unsupported_message(family or "this system", arch))
    merged: dict[str, Package] = {}
    unresolved: dict[str, str] = {}
    for part in (needs if needs is not None else all_needs(arch, for_tests)):
        unresolved.update(part.unresolved)
        for need in part.packages:
            for n in for_family(need, family, kernel):
                first = merged.get(n.package)
                merged[n.package] = (Package(n, part.purpose) if first is None
                                     else replace(first, purpose=f"{first.purpose}, {part.purpose}"))
    return list(merged.values()), unresolved


def unsupported_message(what: str, arch: str = "") -> str:
    by_hand = [b for part in all_needs(arch or "x86_64") for b in part.by_hand]
    return (f"edgebench provisions Debian, Ubuntu and Raspberry Pi OS with apt-get; {what} is none of "
            f"them. Install these with its package manager, then run `make provision CHECK=1` to see what "
            f"is still missing: {', '.join(dict.fromkeys(by_hand))}")


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
