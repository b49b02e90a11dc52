"""Several devices at once: `make figures TARGET=pi1,pi2,pi3` or `make figures FLEET=lab.yml`.

A fleet is a list of devices, each a target (an SSH spec or ~/.ssh/config alias) with a name and
the host its load generators run on. `make figures` checks every device first (Fabric's threading
group: one connection per device, the facts command on all of them at once), provisions the
reachable ones in parallel, then runs one notebook driver per device, in parallel, each writing its
executed notebooks and figures under figures/devices/<name>/ and its data under data/ as usual
(every row names its target). A device that is unreachable, or fails, fails its own notebooks; the
others finish.

A fleet file (YAML):

    devices:
      pi1: {target: pi@10.0.0.11, load_generator: lg1}   # load_generator: where wrk/ab/iperf3 run
      pi2: {target: pi2}                                 # an ~/.ssh/config alias; load from here
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.paths import FIGURES_DIR
from edgebench.provisioning import provision
from edgebench.signals import STOP_SIGNALS, say
from edgebench.targets import FACTS_SCRIPT, LOCAL_NAMES, LocalTarget, SSHTarget, parse_facts

# Where a device's executed notebooks and figures go in a fleet run.
DEVICES_DIR_NAME = "devices"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Device:
    name: str                      # figures/devices/<name>/; letters, digits, . _ -
    target: str                    # "local", "user@host[:port]" or an ~/.ssh/config alias
    load_generator: str = "local"  # where load generators run for this device

    @property
    def figures_dir(self) -> Path:
        return FIGURES_DIR / DEVICES_DIR_NAME / self.name


def device_name(spec: str) -> str:
    """A folder-safe name for a target spec: pi@raspberrypi:2222 -> pi_raspberrypi_2222."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.strip()).strip("_.-")
    if not name:
        raise ConfigError(f"target {spec!r} gives no usable device name")
    return name


def _checked(devices: list[Device], where: str) -> list[Device]:
    if not devices:
        raise ConfigError(f"{where} names no device")
    names = [d.name for d in devices]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where} names {', '.join(dup)} more than once; each device once")
    for d in devices:
        if not _NAME_RE.match(d.name):
            raise ConfigError(f"device name {d.name!r} in {where}: use letters, digits, '.', '_' and '-'")
        if d.target.strip().lower() in LOCAL_NAMES and len(devices) > 1:
            raise ConfigError(f"{where}: 'local' cannot be one of several devices (runs on one machine "
                              "would disturb each other); name SSH targets")
    return devices


def parse_targets(spec: str) -> list[Device]:
    """TARGET as given to make: one target, or several separated by commas."""
    parts = [p.strip() for p in (spec or "").split(",") if p.strip()]
    return _checked([Device(device_name(p), p) for p in parts], f"TARGET={spec!r}")


def load_fleet(path: str | Path) -> list[Device]:
    """Devices from a fleet file (the format in this module's docstring)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"fleet file {path} does not exist")
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"fleet file {path} is not valid YAML: {e}") from None
    entries = doc.get("devices") if isinstance(doc, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(f"fleet file {path}: expected `devices:` mapping names to {{target: ..., "
                          "load_generator: ...}}")
    devices = []
    for name, entry in entries.items():
        entry = {"target": entry} if isinstance(entry, str) else (entry or {})
        unknown = set(entry) - {"target", "load_generator"}
        if unknown or not entry.get("target"):
            raise ConfigError(f"fleet file {path}, device {name!r}: needs `target` (and optionally "
                              f"`load_generator`){'; unknown: ' + ', '.join(sorted(unknown)) if unknown else ''}")
        devices.append(Device(str(name), str(entry["target"]), str(entry.get("load_generator") or "local")))
    return _checked(devices, f"fleet file {path}")


def survey(devices: list[Device], connect_timeout_s: float = 10.0) -> dict[str, dict | str]:
    """Each device's facts, or why it cannot be reached. Connections open in parallel (a dead
    device costs one connect timeout, not one per device); the facts command then runs on all of
    them at once through Fabric's ThreadingGroup."""
    from fabric import ThreadingGroup
    from fabric.exceptions import GroupException

    def open_one(d: Device):
        t = SSHTarget(d.target, connect_timeout_s=connect_timeout_s)
        return t.connect()

    out: dict[str, dict | str] = {}
    targets: dict[str, SSHTarget] = {}
    remote = [d for d in devices if d.target.strip().lower() not in LOCAL_NAMES]
    for d in devices:
        if d not in remote:
            out[d.name] = LocalTarget().facts()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(remote))) as pool:
        futures = {d.name: pool.submit(open_one, d) for d in remote}
        for name, fut in futures.items():
            try:
                targets[name] = fut.result()
            except EdgebenchError as e:
                out[name] = str(e)
    if targets:
        conns = {name: t._connection() for name, t in targets.items()}
        group = ThreadingGroup.from_connections(list(conns.values()))
        try:
            results = group.run(f"sh -c {_quote(FACTS_SCRIPT)}", hide=True, warn=True, timeout=60)
        except GroupException as e:
            results = e.result
        by_conn = {id(c): name for name, c in conns.items()}
        for conn, result in results.items():
            name = by_conn[id(conn)]
            if isinstance(result, Exception):
                out[name] = f"{name}: the facts command failed: {result}"
            elif result.exited != 0:
                out[name] = f"{name}: the facts command exited {result.exited}: {result.stderr[-300:]}"
            else:
                out[name] = parse_facts(result.stdout)
        for t in targets.values():
            t.close()
    return {d.name: out[d.name] for d in devices}


def load_generator_host(target: str, load_generator: str | None) -> str | None:
    """The load-generator host when it is not the target itself (the experiments' `load_generator`:
    "local" is this machine), else None."""
    def local(spec: str) -> bool:
        return spec.strip().lower() in LOCAL_NAMES
    lg = (load_generator or "local").strip()
    if lg == target.strip() or (local(lg) and local(target)):
        return None
    return lg


def provision_load_generators(devices: list[Device]) -> None:
    """Each load generator the devices share, provisioned once before their drivers start (in
    parallel they would each run apt-get on it). One that cannot be is said; its devices go on."""
    for host in dict.fromkeys(h for d in devices if (h := load_generator_host(d.target, d.load_generator))):
        users = ", ".join(d.name for d in devices if load_generator_host(d.target, d.load_generator) == host)
        print(f"[provision] {host}, the load generator for {users}:", file=sys.stderr, flush=True)
        provision.main(["--target", host, "--before-run", "--load-generator"])


def driver_argv(device: Device, args, passed: tuple[str, ...]) -> list[str]:
    """The one-device `make figures` driver for `device`, with the fleet's other settings."""
    argv = [sys.executable, "-m", "edgebench.drivers.figures", "--target", device.target]
    for name in passed:
        value = device.load_generator if name == "load_generator" else getattr(args, name, None)
        if name != "target" and value not in (None, ""):
            argv += [f"--{name}", str(value)]
    if args.only:
        argv += ["--only", args.only]
    for setting in getattr(args, "set", None) or []:
        argv += ["--set", setting]
    argv += [flag for flag, on in (("--quiet", args.quiet), ("--provision", args.provision),
                                   ("--load-generator-ready", args.provision),
                                   ("--plan-only", getattr(args, "plan_only", False))) if on]
    return argv


class _Children:
    """The per-device drivers: their output, prefixed with the device, goes to ours; a stop
    signal to this process is passed on to each (each stops its notebook and keeps its rows)."""

    def __init__(self):
        self.procs: dict[str, subprocess.Popen] = {}
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.signum: int | None = None
        self._threads: list[threading.Thread] = []

    def start(self, device: Device, argv: list[str]) -> None:
        env = dict(os.environ, EDGEBENCH_FIGURES_DIR=str(device.figures_dir), EDGEBENCH_DEVICE=device.name,
                   PYTHONUNBUFFERED="1")
        # A session of its own: a terminal's Ctrl-C reaches it once, through us, not twice.
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", env=env, start_new_session=True)
        self.procs[device.name], self.started[device.name] = proc, time.monotonic()
        t = threading.Thread(target=self._relay, args=(device.name, proc), daemon=True)
        t.start()
        self._threads.append(t)

    def _relay(self, name: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            sys.stdout.write(f"[{name}] {line}")
            sys.stdout.flush()
        proc.wait()
        self.ended[name] = time.monotonic()

    def _on_signal(self, signum, frame) -> None:
        first = self.signum is None
        self.signum = self.signum or signum
        if first:
            say(f"== {signal.Signals(signum).name}: stopping every device's run; measured rows are kept")
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    proc.send_signal(signum)
                except ProcessLookupError:
                    pass

    def wait(self) -> dict[str, int]:
        previous = {s: signal.signal(s, self._on_signal) for s in STOP_SIGNALS}
        try:
            for t in self._threads:
                while t.is_alive():
                    t.join(0.5)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        return {name: proc.wait() for name, proc in self.procs.items()}


def run_fleet(devices: list[Device], args, passed: tuple[str, ...]) -> int:
    """`make figures` on every device at once; see the module's docstring."""
    start = time.monotonic()
    print(f"== fleet: {len(devices)} devices: " + ", ".join(f"{d.name} ({d.target})" for d in devices), flush=True)
    facts = survey(devices)
    reachable = [d for d in devices if isinstance(facts[d.name], dict)]
    for d in devices:
        f = facts[d.name]
        print(f"== {d.name}: " + (f"unreachable, not run: {f}" if isinstance(f, str) else
                                  f"{f.get('arch')}, {f.get('cores')} cores, {f.get('memory_mb')} MiB, "
                                  f"{f.get('os') or ''} {f.get('kernel') or ''}".rstrip()), flush=True)
    if args.provision and not getattr(args, "plan_only", False):
        provision_load_generators(reachable)
    children = _Children()
    for d in reachable:
        children.start(d, driver_argv(d, args, passed))
    codes = children.wait() if reachable else {}
    took = time.monotonic() - start
    print(f"\n{'device':<16} {'result':<22} {'time':>7}  figures")
    for d in devices:
        if d.name not in codes:
            result, secs = "unreachable", "-"
        else:
            code = codes[d.name]
            result = "ok" if code == 0 else f"stopped ({code})" if code > 128 else f"failed (exit {code})"
            secs = f"{children.ended.get(d.name, start + took) - children.started[d.name]:.0f} s"
        print(f"{d.name:<16} {result:<22} {secs:>7}  {d.figures_dir}")
    print(f"fleet: {len(reachable)} of {len(devices)} devices measured in parallel in {took:.0f} s", flush=True)
    if children.signum:
        return 128 + children.signum
    return 0 if len(codes) == len(devices) and not any(codes.values()) else 1


def _quote(text: str) -> str:
    import shlex
    return shlex.quote(text)


__all__ = ["Device", "DEVICES_DIR_NAME", "device_name", "parse_targets", "load_fleet", "survey", "run_fleet",
           "driver_argv", "load_generator_host", "provision_load_generators"]
