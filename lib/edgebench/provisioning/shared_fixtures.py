"""What `make test` takes from the shared folder beside the project (`../shared`, which CI and the
developers' machines have): ops 0.1.55 with its Nanos kernel, Unikraft 0.16.3's images and NPB
3.4.2's source. No package registry carries them and these machines cannot download them, so
without them the nanos, unikraft and NPB tests could only skip.

They are test fixtures, not a way to install edgebench's parts: they are laid out in a cache of the
tests' own (CACHE_DIR), never where a user's ops, images or NPB live, and only the test session
points at it (tests/conftest.py, through `environment()`); `make figures` never reads it. A user
installs ops with its installer, brings Unikraft images and gets NPB from NASA (docs/manual.md).
Without ../shared nothing is laid out, and the tests use what the user installed or skip with the
reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

from edgebench.paths import PROJECT_ROOT
from edgebench.runtimes.unikraft import IMAGES_ENV
from edgebench.targets import LocalTarget
from edgebench.tools import npb

SHARED_DIR = PROJECT_ROOT.parent / "shared"
CACHE_DIR = Path.home() / ".cache" / "edgebench" / "test-fixtures"
# The tests run class S only (seconds each); the other classes are `make figures`' to build.
NPB_TEST_CLASSES = ("S",)
UNIKRAFT_IMAGES = ("elfloader_qemu-x86_64", "nginx_qemu-x86_64", "redis_qemu-x86_64")


def _ops_dir(cache: Path) -> Path:
    return cache / "ops"


def lay_out(log: Callable[[str], None], shared: Path = SHARED_DIR, cache: Path = CACHE_DIR) -> dict[str, str]:
    """Lay out what ../shared holds in the tests' cache (seconds when it is there already).
    Returns {part: why it is not laid out} for nanos, unikraft and npb."""
    missing = {}
    installer = shared / "runtimes" / "nanos" / "install.sh"
    if installer.is_file():
        # install.sh lays ops out as its installer would (bin/ops, .ops/<version>, latest.txt).
        r = subprocess.run(["bash", str(installer), str(_ops_dir(cache))], capture_output=True, text=True)
        if r.returncode:
            missing["nanos"] = f"{installer} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}"
    else:
        missing["nanos"] = f"no {installer} (ops with its Nanos kernel, for tests)"

    images = shared / "runtimes" / "unikraft"
    if (images / UNIKRAFT_IMAGES[0]).is_file():
        (cache / "unikraft").mkdir(parents=True, exist_ok=True)
        for name in UNIKRAFT_IMAGES:
            source, copy = images / name, cache / "unikraft" / name
            if source.is_file() and (not copy.is_file() or copy.stat().st_mtime < source.stat().st_mtime
                                     or copy.stat().st_size != source.stat().st_size):
                shutil.copy2(source, copy)
    else:
        missing["unikraft"] = f"no {images / UNIKRAFT_IMAGES[0]} (Unikraft images, for tests)"

    tarball = shared / "npb" / f"NPB{npb.VERSION}.tar.gz"
    bin_dir = str(cache / "npb" / "bin")
    if not tarball.is_file():
        missing["npb"] = f"no {tarball} (NASA's NPB {npb.VERSION} source, for tests)"
    elif not npb.built(LocalTarget(), bin_dir, NPB_TEST_CLASSES):
        log(f"building NPB {npb.VERSION} class {','.join(NPB_TEST_CLASSES)} for the tests from {tarball} "
            "(about 15 s)")
        failure = npb.build(LocalTarget(), str(tarball), bin_dir, NPB_TEST_CLASSES)
        if failure:
            missing["npb"] = failure
    return missing


def environment(cache: Path = CACHE_DIR) -> dict[str, str]:
    """The variables that point a test session at what lay_out() laid out, part by part: ops on
    PATH with its home (OPS_HOME), the Unikraft images' folder, the NPB binaries' folder."""
    env = {}
    ops = _ops_dir(cache)
    if os.access(ops / "bin" / "ops", os.X_OK) and (ops / ".ops" / "latest.txt").is_file():
        env["OPS_HOME"] = str(ops)
        env["PATH"] = f"{ops / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    if (cache / "unikraft" / UNIKRAFT_IMAGES[0]).is_file():
        env[IMAGES_ENV] = str(cache / "unikraft")
    if npb.built(LocalTarget(), str(cache / "npb" / "bin"), NPB_TEST_CLASSES):
        env[npb.DIR_VARIABLE] = str(cache / "npb" / "bin")
    return env
