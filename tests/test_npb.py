"""NPB: the report parser on recorded outputs of every benchmark (NPB 3.4.2, built in a lab
folder outside the project), finding binaries on a target, the classes provisioning builds for a
run's profile, and a real run where NPB is built."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import need
from edgebench.errors import EdgebenchError
from edgebench.experiments.common import PROFILES
from edgebench.paths import PROJECT_ROOT
from edgebench.provisioning.needs import Preparation
from edgebench.targets import LocalTarget
from edgebench.tools import npb

DATA = Path(__file__).parent / "data" / "npb"
RECORDED = sorted(DATA.glob("*.[SW].out"))


def test_every_benchmark_has_a_recorded_class_s_output():
    assert {p.name.split(".")[0] for p in DATA.glob("*.S.out")} == set(npb.BENCHMARKS)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_parse_recorded(path):
    text = path.read_text()
    bench, cls = path.name.split(".")[:2]
    parsed = npb.parse(text)
    assert parsed["benchmark"] == bench and parsed["class"] == cls
    assert parsed["verified"] is True and parsed["verification"] == "SUCCESSFUL"
    assert parsed["threads"] == 2 and parsed["version"] == npb.VERSION
    time_line = re.search(r"Time in seconds =\s+([\d.]+)", text).group(1)
    assert parsed["time_s"] == float(time_line)
    assert parsed["mops_total"] > 0


def test_unsuccessful_verification_is_false():
    parsed = npb.parse((DATA / "lu.S.unsuccessful.out").read_text())
    assert parsed["verified"] is False and parsed["verification"] == "UNSUCCESSFUL"


def test_no_result_block_is_an_error():
    text = (DATA / "cg.S.out").read_text()
    with pytest.raises(EdgebenchError, match="no result block"):
        npb.parse(text.split("Benchmark Completed")[0])


def test_find_binaries_names_what_is_missing(local, tmp_path, monkeypatch):
    for name in ("ep.S.x", "cg.S.x", "ep.W.x"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv(npb.DIR_VARIABLE, str(tmp_path))
    found, missing = npb.find_binaries(local, ["ep", "cg"], ["S", "W"])
    assert found == {("ep", "S"): f"{tmp_path}/ep.S.x", ("cg", "S"): f"{tmp_path}/cg.S.x",
                     ("ep", "W"): f"{tmp_path}/ep.W.x"}
    assert list(missing) == [("cg", "W")] and "cg.W.x" in missing[("cg", "W")]
    assert npb.DIR_VARIABLE in missing[("cg", "W")] and "make provision" in missing[("cg", "W")]


def test_real_npb_run_verifies(local, tmp_path):
    """Where NPB is built (provisioning, or EDGEBENCH_NPB_DIR): EP class S runs and verifies."""
    found, missing = npb.find_binaries(local, ["ep"], ["S"])
    need("npb", missing.get(("ep", "S")))
    r = local.run(f"cd {tmp_path} && OMP_NUM_THREADS=2 {found[('ep', 'S')]}", timeout=120)
    parsed = npb.parse(r.stdout)
    assert parsed["verified"] is True and parsed["threads"] == 2 and parsed["class"] == "S"


class _Workspace(LocalTarget):
    """This machine with its edgebench workspace in a folder of the test's."""

    def __init__(self, folder):
        super().__init__()
        self.folder = str(folder)

    @property
    def workspace(self) -> str:
        return self.folder


@pytest.mark.parametrize("profile, classes", [("quick", "S"), ("smoke", "S"), ("standard", "S, W, A"),
                                              (None, "S, W, A")])
def test_provisioning_builds_the_classes_its_runs_profile_uses(tmp_path, monkeypatch, profile, classes):
    """A quick run on an emulated board would otherwise wait for classes W and A it never runs."""
    target = _Workspace(tmp_path)
    need("npb", None if all(target.which(t) for t in ("gfortran", "gcc", "make")) else "no gfortran, gcc or make")
    monkeypatch.delenv(npb.DIR_VARIABLE, raising=False)
    prep = Preparation(target, True, [], {}, {}, [], lambda _: None, lambda: None, profile=profile)
    npb.install(prep)  # check: says what it would build, builds nothing
    assert prep.actions == [f"build NPB {npb.VERSION} (OpenMP) for classes {classes} in {tmp_path}/npb/bin"]
    (tmp_path / "npb" / "bin").mkdir(parents=True)  # class S there already: a quick run needs nothing more
    for bench in npb.BENCHMARKS:
        (tmp_path / "npb" / "bin" / npb.binary_name(bench, "S")).write_text("")
    again = Preparation(target, True, [], {}, {}, [], lambda _: None, lambda: None, profile=profile)
    npb.install(again)
    assert again.actions == ([] if classes == "S" else [f"build NPB {npb.VERSION} (OpenMP) for classes {classes} "
                                                        f"in {tmp_path}/npb/bin"])


def test_every_profile_names_its_npb_classes():
    assert set(npb.PROFILE_CLASSES) == set(PROFILES)


def test_make_provision_passes_the_profile_and_refuses_an_unknown_one():
    """`make provision TARGET=pi PROFILE=quick` builds class S only (20 min less on an emulated board);
    a misspelt profile must not quietly build every class."""
    # Not the outer make's settings either (`make test PROFILE=...` hands them down in MAKEFLAGS).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EDGEBENCH_") and k not in ("PROFILE", "TARGET", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    shown = subprocess.run(["make", "--no-print-directory", "-n", "provision", "PROFILE=quick"], cwd=PROJECT_ROOT,
                           env=env, capture_output=True, text=True, check=True).stdout
    assert "--profile 'quick'" in shown
    assert "--profile" not in subprocess.run(["make", "--no-print-directory", "-n", "provision"], cwd=PROJECT_ROOT,
                                             env=env, capture_output=True, text=True, check=True).stdout
    bad = subprocess.run(["make", "--no-print-directory", "provision", "PROFILE=qiuck", "CHECK=1"], cwd=PROJECT_ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "PROFILE: unknown profile 'qiuck'" in bad.stderr, bad.stderr
