"""What a part of edgebench needs on a target, as types the rest declares with: a package and
what runs it (`Need`), a version to record (`Version`), a part's needs (`TargetNeeds`), and what a
part's own installer is handed (`Preparation`); and how a target is asked for versions.

A runtime declares its own (`Runtime.target_needs(arch)`); the experiments' tools are declared in
edgebench.provisioning.parts, which gathers every part. Nothing here imports a runtime or a tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from edgebench.targets import Target, sh


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
    # Also needed on a load-generator host, which drives load at the target from outside (wrk, ab,
    # iperf3's client, redis-benchmark, the registry first starts pull from): `make figures` on a
    # remote target provisions these there (this machine, by default).
    on_load_generator: bool = False


# -- asking the target ----------------------------------------------------------------------

PATH_EXTRA = 'export PATH="$PATH:/usr/sbin:/sbin:/usr/local/sbin:/snap/bin:$HOME/.ops/bin:$HOME/.cargo/bin"'

# name<TAB>exit code or "absent"<TAB>path<TAB>the first output line with a version number in it, else
# the first non-empty one (offline, ops says "version lookup failed, using local." before its version)
_VERSIONS = PATH_EXTRA + r"""
v() {
  name=$1; shift
  p=$(command -v "$1" 2>/dev/null) || { printf '%s\tabsent\t\t\n' "$name"; return; }
  if command -v timeout >/dev/null 2>&1; then out=$(timeout 90 "$@" 2>&1 </dev/null); rc=$?
  else out=$("$@" 2>&1 </dev/null); rc=$?; fi
  first=$(printf '%s\n' "$out" | grep -m 1 '[0-9]\.[0-9]' ||
          printf '%s\n' "$out" | grep -v '^[[:space:]]*$' | head -n 1)
  first=$(printf '%s' "$first" | tr '\t' ' ')
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
    # The profile a `make figures` run provisions for (None: `make provision`, every profile), for
    # a part whose size depends on it (NPB's classes).
    profile: str | None = None

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
