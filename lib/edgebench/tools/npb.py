"""The NAS Parallel Benchmarks (NPB3.4-OMP): where their binaries are on a target, how
provisioning builds them there from NASA's sources, and their report.

edgebench does not ship NPB: `make provision` downloads NASA's tarball onto the target (or
uploads one the user names with EDGEBENCH_NPB_TARBALL) and builds every benchmark for classes S,
W and A with the target's gfortran and gcc; EDGEBENCH_NPB_DIR names a directory of binaries built
elsewhere (`<bench>.<CLASS>.x`, NPB's own names). NPB compiles the class into the binary, so each
(benchmark, class) is one program.
"""

from __future__ import annotations

import os
import posixpath
import re

from edgebench.errors import EdgebenchError
from edgebench.targets import Target, sh

VERSION = "3.4.2"
SOURCE_URL = f"https://www.nas.nasa.gov/assets/npb/NPB{VERSION}.tar.gz"
# The kernels, the pseudo-applications and the two newer ones (unstructured adaptive, data cube),
# in the order paper 003 lists them.
BENCHMARKS = ("is", "ep", "cg", "mg", "ft", "bt", "sp", "lu", "ua", "dc")
CLASSES = ("S", "W", "A")
# The classes each profile runs (container_overhead's settings read them here): provisioning for a
# quick run builds class S alone, which on an emulated board saves most of the build.
PROFILE_CLASSES = {"smoke": ("S",), "quick": ("S",), "standard": CLASSES}
BUILD_TIMEOUT_S = 3600
DIR_VARIABLE = "EDGEBENCH_NPB_DIR"
TARBALL_VARIABLE = "EDGEBENCH_NPB_TARBALL"


def binary_name(bench: str, cls: str) -> str:
    return f"{bench.lower()}.{cls.upper()}.x"


def binaries_dir(target: Target) -> str:
    """Where the binaries are on the target: EDGEBENCH_NPB_DIR, else where provisioning builds them."""
    return os.environ.get(DIR_VARIABLE) or f"{target.workspace}/npb/bin"


def find_binaries(target: Target, benchmarks: list[str], classes: list[str]) -> tuple[dict, dict]:
    """({(bench, class): path}, {(bench, class): why it is missing}) on the target."""
    directory = binaries_dir(target)
    listing = target.run(["ls", "-1", directory], check=False).stdout.split()
    found, missing = {}, {}
    for cls in classes:
        for bench in benchmarks:
            name = binary_name(bench, cls)
            if name in listing:
                found[(bench, cls)] = posixpath.join(directory, name)
            else:
                missing[(bench, cls)] = (f"no NPB binary {name} in {directory} on {target.name}: `make provision` "
                                         f"builds NPB {VERSION} there (it needs {SOURCE_URL} or "
                                         f"{TARBALL_VARIABLE}=NPB{VERSION}.tar.gz), or set {DIR_VARIABLE} to a "
                                         f"directory of NPB3.4-OMP binaries")
    return found, missing


def install(prep) -> None:
    """Build NPB on the target once: every benchmark, in the classes the run's profile uses (S, W
    and A for standard or `make provision`, about a minute on two cores after the download; S
    alone for quick and smoke). Missing sources or compilers leave the HPC rows missing, with why."""
    target = prep.target
    if os.environ.get(DIR_VARIABLE):
        return
    bin_dir = binaries_dir(target)
    classes = PROFILE_CLASSES.get(prep.profile or "", CLASSES)
    if built(target, bin_dir, classes):
        return
    for tool in ("gfortran", "gcc", "make"):
        if not target.which(tool):
            prep.missing["npb"] = f"not built: no {tool} on {target.name} (apt-get install gfortran gcc make)"
            return
    if prep.check:
        prep.would(f"build NPB {VERSION} (OpenMP) for classes {', '.join(classes)} in {bin_dir}", "npb",
                   "not built; would build it")
        return
    tarball = f"{posixpath.dirname(bin_dir)}/NPB{VERSION}.tar.gz"
    local = os.environ.get(TARBALL_VARIABLE)
    if local:
        target.upload_if_changed(local, tarball)
    elif not target.run(["test", "-s", tarball], check=False).ok:
        fetch = (["curl", "-fsSL", "--max-time", "300", "-o", tarball, SOURCE_URL] if target.which("curl") else
                 ["wget", "-q", "-T", "60", "-O", tarball, SOURCE_URL])
        target.run(["mkdir", "-p", posixpath.dirname(tarball)])
        r = target.run(fetch, timeout=400, check=False)
        if not r.ok:
            target.run(["rm", "-f", tarball], check=False)
            prep.missing["npb"] = (f"not built: {SOURCE_URL} is unreachable from {target.name} "
                                   f"({(r.stderr or r.stdout).strip()[-150:] or 'exit ' + str(r.exit_code)}); "
                                   f"download it elsewhere and set {TARBALL_VARIABLE}, or set {DIR_VARIABLE}")
            return
    prep.log(f"building NPB {VERSION} (OpenMP) on {target.name}: {len(BENCHMARKS) * len(classes)} programs, "
             f"classes {', '.join(classes)}")
    failure = build(target, tarball, bin_dir, classes)
    prep.rescan()
    if failure:
        prep.fail("npb", failure)
        return
    prep.did(f"built NPB {VERSION} (classes {', '.join(classes)}) in {bin_dir}")


def built(target: Target, bin_dir: str, classes) -> bool:
    """Every benchmark of these classes is in bin_dir."""
    have = target.run(["ls", "-1", bin_dir], check=False).stdout.split()
    return all(binary_name(b, c) in have for c in classes for b in BENCHMARKS)


def build(target: Target, tarball: str, bin_dir: str, classes) -> str | None:
    """Every benchmark of these classes from NASA's tarball (a path on the target) into bin_dir,
    with the target's gfortran and gcc; None, or why the build failed."""
    base = posixpath.dirname(bin_dir)
    src = f"{base}/src/NPB{VERSION}/NPB3.4-OMP"
    script = " && ".join([
        f"rm -rf {sh([base + '/src'])}", f"mkdir -p {sh([base + '/src', bin_dir])}",
        f"tar -xzf {sh([tarball])} -C {sh([base + '/src'])}", f"cd {sh([src])}",
        "cp config/make.def.template config/make.def",
        # One program at a time: NPB's makefiles share object files between classes.
        *(f"make {b} CLASS={c} >> ../build.log 2>&1" for c in classes for b in BENCHMARKS),
        f"cp bin/*.x {sh([bin_dir])}", f"echo 'NPB {VERSION} (NPB3.4-OMP, gfortran -O3 -fopenmp)' > "
                                        f"{sh([bin_dir + '/VERSION'])}"])
    r = target.run(["sh", "-c", script], timeout=BUILD_TIMEOUT_S, check=False)
    if r.ok:
        return None
    log = target.run(["tail", "-n", "5", f"{base}/src/NPB{VERSION}/build.log"], check=False).stdout
    return f"building NPB {VERSION} failed (exit {r.exit_code}): {(r.stderr + log).strip()[-300:]}"


_FIELD = re.compile(r"^\s*(Class|Size|Iterations|Time in seconds|Total threads|Mop/s total|Verification|Version)"
                    r"\s*=\s*(.+?)\s*$", re.M)


def parse(text: str) -> dict:
    """An NPB report: time_s (NPB's timed section, printed to 10 ms), mops_total, verified (True,
    False, or None where the benchmark did not verify), and the class, threads and version it
    says it ran."""
    fields = dict(_FIELD.findall(text))
    if "Time in seconds" not in fields:
        raise EdgebenchError(f"NPB printed no result block: {text.strip()[-300:]!r}")
    name = re.search(r"\(NPB[\w.-]*\) - (\w+) Benchmark", text)
    verification = fields.get("Verification", "not printed")
    def number(key):
        return float(fields[key]) if re.fullmatch(r"[\d.]+", fields.get(key, "")) else None

    return {"benchmark": name.group(1).lower() if name else None, "class": fields.get("Class"),
            "time_s": number("Time in seconds"), "mops_total": number("Mop/s total"),
            "threads": int(fields["Total threads"]) if fields.get("Total threads", "").isdigit() else None,
            "verification": verification,
            "verified": {"SUCCESSFUL": True, "UNSUCCESSFUL": False}.get(verification),
            "version": fields.get("Version")}
