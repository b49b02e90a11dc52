"""The `ops` CLI that builds and runs Nanos images, as NanosRuntime uses it: the image's and
each start's configuration (from `nanos-configs/<app>.json`), the command lines, where ops is
and keeps its files, and what its output says (versions, warnings worth a note).

ops runs QEMU; what QEMU was then started with is read back by runtimes/qemu.py.
"""

from __future__ import annotations

import json
import re

from edgebench.errors import ConfigError
from edgebench.paths import NANOS_CONFIGS_DIR
from edgebench.provisioning.needs import Preparation, Version, tail
from edgebench.runtimes.contract import Limits
from edgebench.runtimes.qemu import vcpus_for

ACCEL_MODES = ("auto", "kvm", "tcg")
BUILD_TIMEOUT_S = 300

# ops on PATH, or where its installer puts it (ops' home's bin/).
FIND_OPS = ('command -v ops && exit 0; for d in "${OPS_HOME:+$OPS_HOME/.ops}" "$HOME/.ops"; do '
            '[ -n "$d" ] && [ -x "$d/bin/ops" ] && { echo "$d/bin/ops"; exit 0; }; done; exit 1')
# Where ops keeps images and kernels: the first word, $OPS_HOME/.ops when set, else ~/.ops.
OPS_HOME = 'echo "${OPS_HOME:+$OPS_HOME/.ops}"; echo "$HOME/.ops"'


INSTALLER = "https://ops.city/get.sh"
INSTALL_BY_HAND = f"ops (Nanos): curl {INSTALLER} -sSfL | sh"
REACH_TIMEOUT_S = 5
VERSION = Version("ops", ("ops", "version"))


def install(prep: Preparation) -> None:
    """ops with its official installer, only where that answers (it needs the internet); else
    the table says why ops is missing."""
    if "ops" in prep.commands:
        return
    if "curl" not in prep.commands:
        prep.missing["ops"] = "not installed (no curl to fetch its installer)"
        return
    target = prep.target
    r = target.run(["curl", "-sfI", "--max-time", str(REACH_TIMEOUT_S), INSTALLER],
                   timeout=REACH_TIMEOUT_S + 10, check=False)
    if not r.ok:
        prep.missing["ops"] = f"not installed: {INSTALLER} is unreachable (no internet; curl exit {r.exit_code})"
        return
    if prep.check:
        prep.would(f"install ops ({INSTALLER})", "ops", "not installed; would install with its official installer")
        return
    prep.log(f"installing ops with {INSTALLER}")
    prep.did(f"installed ops ({INSTALLER})")
    # As the user (it installs into ~/.ops); its kvm-group question gets the default answer.
    inst = target.run(["sh", "-c", 'curl -sSfL "$1" | sh', "ops-install", INSTALLER], timeout=900,
                      check=False, stdin="")
    prep.rescan()
    if "ops" not in prep.commands:
        prep.fail("ops", f"the installer did not leave ops on PATH or in ~/.ops/bin: {tail(inst.stdout + inst.stderr)}")


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


def run_config(image: dict, limits: Limits) -> dict:
    """The per-start configuration: the image's, with the requested vCPUs and memory."""
    config = json.loads(json.dumps(image))
    run = config.setdefault("RunConfig", {})
    run.pop("Ports", None)
    run["CPUs"] = vcpus_for(limits.cpus)
    if limits.memory_mb is not None:
        run["Memory"] = f"{int(limits.memory_mb)}M"
    return config


def ops_build_argv(ops: str, program: str, config_path: str, image_name: str) -> list[str]:
    return [ops, "build", program, "-c", config_path, "-i", image_name]


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
