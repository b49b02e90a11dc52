"""Prepare a target for every edgebench experiment: `make provision [TARGET=local|user@host]`.

    python -m edgebench.provisioning.provision --target pi@raspberrypi [--check]

Idempotent. Through the target's package manager (apt-get on Debian, Ubuntu and Raspberry Pi
OS; anything else gets the list of packages to install by hand), it installs only what is
missing: dpkg-query is asked first, so a second run installs nothing and takes seconds. A
package the target's repositories do not carry (e.g. `lxd` before Debian 12) is reported with
the reason, and the rest goes on. Then each runtime starts what must run (`prepare_target`: the
Docker daemon, LXD and its base image, ops where its installer answers). It ends with one row
per runtime and per tool: ok, or missing and why.

What to install and start is not written here: every runtime in the registry declares its
needs, and the experiments' tools are declared in `edgebench.provisioning.parts`;
`edgebench.provisioning.apt` turns them into the plan. Every command goes through `Target.run`,
so an SSH target is provisioned exactly like this machine. Needs root there, or passwordless sudo
(`sudo -n true`); otherwise it stops before changing anything. `--check` changes nothing: it
prints the table and what would be done.

The module holds the table a user reads (Row, Report), the steps that fill it (Provisioner: the
survey, the packages, the daemons, the runtimes and tools) and the command line. It is one module
because the steps and the table are one story, read in the order `make provision` runs them: each
step writes the rows that say what it did; what each part needs is in parts.py, how apt installs
it in apt.py.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import check_profile
from edgebench.provisioning.apt import (Plan, UnsupportedTarget, install_argv, make_plan, os_family, packages_for,
                                        parse_apt_policy, parse_dpkg_query, unsupported_message, update_argv)
from edgebench.provisioning.needs import PATH_EXTRA, Preparation, VersionState, tail, version_states
from edgebench.provisioning import shared_fixtures
from edgebench.provisioning.parts import TOOL_NEEDS, runtime_needs, survey_commands, table_versions
from edgebench.runtimes import RUNTIMES
from edgebench.targets import Target, connect

APT_UPDATE_MAX_AGE_S = 24 * 3600  # when only unavailable packages are missing, re-ask apt this often


class ProvisionError(EdgebenchError):
    """Provisioning cannot start (privileges); the message says what to change."""


def parse_kv(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


# One round trip: the distribution, PID 1, privileges, apt's state and which commands exist.
_SURVEY = PATH_EXTRA + r"""
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



class Provisioner:
    """Runs the plan on one target. `run()` returns the Report; `--check` changes nothing."""

    def __init__(self, target: Target, check: bool = False, log: Callable[[str], None] | None = None,
                 for_tests: bool = False, before_run: bool = False, runtimes: tuple[str, ...] | None = None,
                 tools: bool | None = None, load_generator: bool = False, profile: str | None = None):
        self.target = target
        self.profile = profile  # the run's, for parts sized by it (NPB's classes); None: every profile
        # Only these runtimes' packages and preparation (None: every runtime's), and the tools or not:
        # by default not when runtimes are named (a test device that exercises Docker and LXD needs no
        # more); `make figures RUNTIMES=native,docker` names them and keeps the tools.
        self.runtimes = tuple(runtimes) if runtimes else None
        self.tools = self.runtimes is None if tools is None else tools
        # A load-generator host: no runtime, only the tools that drive load from outside.
        self.tool_needs = tuple(n for n in TOOL_NEEDS if n.on_load_generator) if load_generator else TOOL_NEEDS
        if load_generator:
            self.runtimes, self.tools = (), True
        self.before_run = before_run
        self.check = check
        self.for_tests = for_tests
        self.log = log or (lambda msg: print(f"[provision] {msg}", file=sys.stderr, flush=True))
        self.sudo: list[str] = []
        self.survey: dict[str, str] = {}
        self.commands: dict[str, str] = {}
        self.report = Report(target.name, check=check)
        self.missing: dict[str, str] = {}  # part -> why it is missing, from the runtimes' preparation
        self.arch = ""

    # -- reading the target ------------------------------------------------------------
    @property
    def stamp(self) -> str:
        return f"{self.target.workspace}/provision/apt-update.stamp"

    def read_survey(self) -> dict[str, str]:
        commands = survey_commands(self.arch, self.for_tests)
        r = self.target.run(["sh", "-c", _SURVEY, "survey", self.stamp, *commands], timeout=60)
        kv = parse_kv(r.stdout)
        self.commands.clear()  # in place: a Preparation holds this dict
        self.commands.update({k[4:]: v for k, v in kv.items() if k.startswith("cmd:")})
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

    def compute_plan(self) -> Plan:
        facts = self.target.facts()
        family = os_family(self.survey)
        if family is None or not self.survey.get("apt_get"):
            name = self.survey.get("os_name") or self.survey.get("os_id") or "this system"
            raise UnsupportedTarget(unsupported_message(f"{self.target.name} ({name})", self.arch))
        needs = None if self.runtimes is None else [*(runtime_needs(self.arch)[r] for r in self.runtimes),
                                                    *(self.tool_needs if self.tools else ())]
        packages, unresolved = packages_for(family, self.arch, facts.get("kernel") or "", self.for_tests, needs)
        names = sorted({p.name for p in packages} | {c for p in packages for c in p.conflicts})
        installed = self.dpkg_installed(names)
        missing = [p.name for p in packages if p.name not in installed]
        return make_plan(family, self.arch, packages, installed, self.commands, self.apt_candidates(missing),
                         unresolved)

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
        self.arch = rep.arch = facts.get("arch") or ""
        self.read_survey()
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
        if self.for_tests and self.target.is_local:
            self.timed("shared fixtures", self.take_shared_fixtures)
        self.prepare_runtimes()
        self.prepare_tools()
        self.timed("table", self.table, plan)
        rep.elapsed_s = time.monotonic() - t0
        return rep

    def packages(self, plan: Plan) -> Plan:
        rep = self.report
        rep.already_installed = [s.package.name for s in plan.present]
        rep.notes = plan.notes
        for note in rep.notes:
            self.log(note)
        rep.unavailable = {**plan.unavailable, **plan.unresolved}
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
                rep.failed["apt-get update"] = tail(r.stderr)
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
                self.log(f"apt-get install failed ({tail(r.stderr, 1)}); retrying one package at a time")
                for name in todo:
                    one = self.target.run(install_argv([name], self.sudo), timeout=1800, check=False)
                    if not one.ok:
                        rep.failed[name] = f"apt-get install failed: {tail(one.stderr)}"
            elif not r.ok:
                rep.failed[todo[0]] = f"apt-get install failed: {tail(r.stderr)}"
            now = self.dpkg_installed(todo)
            rep.installed_now = [n for n in todo if n in now]
            self.quiet_daemons(plan, rep.installed_now)
            for n in todo:
                if n not in now and n not in rep.failed:
                    rep.failed[n] = "apt-get reported success but dpkg does not list it as installed"
            self.read_survey()
        return plan

    def quiet_daemons(self, plan: Plan, installed_now: list[str]) -> None:
        """Stop and disable the services that packages installed now started (redis-server on a
        systemd device): the experiments start those programs themselves, and a device must not
        be left serving something the user did not ask for. A package that was already there keeps
        its service as the user had it."""
        for state in plan.states:
            unit = state.package.need.daemon
            if not unit or state.package.name not in installed_now:
                continue
            r = self.target.run(["sh", "-c", '[ -d /run/systemd/system ] || { echo no-systemd; exit 0; }; '
                                 '"$@" systemctl disable --now "$0"', unit, *self.sudo], timeout=120, check=False)
            if r.ok and "no-systemd" not in r.stdout:
                self.report.actions.append(f"systemctl disable --now {unit}")
            elif not r.ok:
                self.report.failed[f"stop {unit}"] = tail(r.stderr)

    def take_shared_fixtures(self) -> None:
        """`make test` on this machine: what ../shared holds for the tests (ops and Nanos, Unikraft
        images, NPB's source), laid out in the tests' cache; the table then shows what the tests get."""
        if not self.check:
            for part, why in shared_fixtures.lay_out(self.log).items():
                self.log(f"tests' {part}: {why}")
        env = shared_fixtures.environment()
        if env:
            os.environ.update(env)
            self.read_survey()  # ops on PATH now

    def prepare_runtimes(self) -> None:
        """Each runtime, in the registry's order, starts what it needs (daemons, images, its CLI)."""
        rep = self.report
        for name, cls in RUNTIMES.items():
            if self.runtimes is not None and name not in self.runtimes:
                continue
            prep = Preparation(self.target, self.check, self.sudo, self.commands, self.survey,
                               rep.would_install, self.log, self.read_survey, rep.actions, rep.failed,
                               self.missing, self.profile)
            self.timed(name, cls.prepare_target, prep)

    def prepare_tools(self) -> None:
        """The tools that no package provides (oha from crates.io); some not for `make test`."""
        rep = self.report
        for needs in self.tool_needs if self.tools else ():
            if needs.prepare is None:
                continue
            name = needs.versions[0].name if needs.versions else needs.purpose
            if self.for_tests and not needs.prepare_for_tests:
                if name not in self.commands:
                    self.missing[name] = "not installed by `make test` (too long a build); `make provision` installs it"
                continue
            prep = Preparation(self.target, self.check, self.sudo, self.commands, self.survey,
                               rep.would_install, self.log, self.read_survey, rep.actions, rep.failed,
                               self.missing, self.profile)
            self.timed(name, needs.prepare, prep)

    # -- the table ---------------------------------------------------------------------------
    def table(self, plan: Plan) -> None:
        facts = self.target.facts(refresh=not self.check)
        versions = table_versions(self.arch)
        states = version_states(self.target, versions)
        needs = runtime_needs(self.arch)
        rows = [self.runtime_row(name, cls, facts, states, needs[name]) for name, cls in RUNTIMES.items()
                if self.runtimes is None or name in self.runtimes]
        # Named runtimes: the other runtimes' programs are not asked for, so not listed.
        mine = {v.name for n in self.tool_needs for v in n.versions} | {
            v.name for r in (RUNTIMES if self.runtimes is None else self.runtimes) for v in needs[r].versions}
        for v in versions if self.tools else ():
            if v.name not in mine:
                continue
            s = states[v.name]
            rows.append(Row("tool", v.name, True, s.version) if s.ok else
                        Row("tool", v.name, False, self.missing_tool_reason(v.name, s, plan)))
        self.report.rows = rows

    def missing_tool_reason(self, name: str, state: VersionState, plan: Plan) -> str:
        if name in self.missing:
            return self.missing[name]
        for s in plan.states:
            if s.package.command == name:
                pkg = s.package.name
                if pkg in self.report.failed:
                    return f"{state.detail}; {pkg}: {self.report.failed[pkg]}"
                if pkg in self.report.unavailable:
                    return f"{state.detail}; {pkg} is {self.report.unavailable[pkg]}"
                if self.check and pkg in self.report.would_install:
                    return f"{state.detail}; would install {pkg}"
                return f"{state.detail} (package {pkg})"
        return state.detail

    def runtime_row(self, name: str, cls, facts: dict, states: dict[str, VersionState], needs) -> Row:
        try:
            runtime = cls(self.target)
            availability = runtime.availability()
            if availability.ok:
                named_only = f"; only when named: {availability.reason}" if availability.named_only else ""
                return Row("runtime", name, True, runtime.describe() + named_only)
        except EdgebenchError as e:
            return Row("runtime", name, False, str(e).splitlines()[0])
        # What the runtime needs, each with its state.
        parts = []
        for v in needs.versions:
            s = states.get(v.name)
            parts.append(f"{v.name} {s.version}" if s and s.ok else
                         f"{v.name} missing ({self.missing.get(v.name) or (s.detail if s else 'not checked')})")
        parts += [f"{key}: {facts.get(key) or 'unknown'}" for key in needs.facts]
        return Row("runtime", name, False, "; ".join([availability.reason, *parts]))


def provision(target: Target, check: bool = False, log: Callable[[str], None] | None = None,
              for_tests: bool = False, before_run: bool = False, runtimes: tuple[str, ...] | None = None,
              tools: bool | None = None, load_generator: bool = False, profile: str | None = None) -> Report:
    """Provision `target` (or only look, with check=True). Raises UnsupportedTarget or
    ProvisionError before changing anything when it cannot; with before_run=True, a target
    without root is only looked at (what is missing is reported, nothing is raised). `runtimes`:
    only those runtimes' parts, and no tools unless `tools` is True. `load_generator`: no runtime,
    only the tools a load-generator host runs (parts.TargetNeeds.on_load_generator). `profile`: the
    run's, for parts whose size depends on it (NPB builds only the classes it runs)."""
    if runtimes:
        unknown = [r for r in runtimes if r not in RUNTIMES]
        if unknown:
            raise EdgebenchError(f"unknown runtime(s) {', '.join(unknown)}; choose from {', '.join(RUNTIMES)}")
    return Provisioner(target, check=check, log=log, for_tests=for_tests, before_run=before_run,
                       runtimes=runtimes, tools=tools, load_generator=load_generator, profile=profile).run()


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
    ap.add_argument("--runtimes", default="",
                    help="only these runtimes' packages and set-up, no tools (e.g. docker,lxd)")
    ap.add_argument("--with-tools", action="store_true",
                    help="with --runtimes: the tools too (what `make figures RUNTIMES=...` provisions)")
    ap.add_argument("--profile", default="",
                    help="the profile of the run this provisions for (make figures passes it): parts sized by it, "
                         "such as NPB's classes, only as big as it needs; none: every profile's")
    ap.add_argument("--load-generator", action="store_true",
                    help="the host drives load at a target from outside: only wrk, ab, iperf3, redis-benchmark, "
                         "curl, oha and the image registry, no runtime")
    args = ap.parse_args(argv)
    if args.profile:  # before anything is installed, as make figures checks it
        try:
            check_profile(args.profile)
        except ConfigError as e:
            ap.error(f"PROFILE: {e}, or leave it out to provision for every profile")
    opts = {"accept_new_host_key": True} if args.accept_new_host_key else {}  # only SSH targets use it
    try:
        with connect(args.target, **opts) as target:
            report = provision(target, check=args.check, for_tests=args.for_tests, before_run=args.before_run,
                               runtimes=tuple(r.strip() for r in args.runtimes.split(",") if r.strip()) or None,
                               tools=True if args.with_tools else None, load_generator=args.load_generator,
                               profile=args.profile or None)
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
