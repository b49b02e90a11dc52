"""What a binary loads, as the shell fragments of edgebench.rootfs read it, on this machine's own
binaries (Debian's node, whose libnode names files under /usr/share/nodejs, is on the debian-v2
device: tests/test_device_v2.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from conftest import need

from edgebench import rootfs

SYSTEM = re.compile(r"/(ld-linux[^/]*|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so")


def ldd_paths(binary: str) -> set[str]:
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return {p for line in out.splitlines() for p in re.findall(r"(/\S+)", line.split("(")[0])}


def own_bytes(binary: str) -> tuple[int, int]:
    out = subprocess.run(["sh", "-c", rootfs.own_bytes('"$1"'), "size", binary], capture_output=True,
                         text=True, check=True).stdout
    first, rest = out.split()
    return int(first), int(rest)


def test_own_bytes_are_the_binary_and_what_it_loads_beyond_the_c_runtime():
    need("curl", None if shutil.which("curl") else "no curl (`make provision` installs it)")
    curl = os.path.realpath(shutil.which("curl"))
    own = {os.path.realpath(p) for p in ldd_paths(curl) if not SYSTEM.search(p)}
    assert any("libcurl" in p for p in own)
    assert own_bytes(curl) == (os.path.getsize(curl), sum(os.path.getsize(p) for p in own))


def test_a_binary_that_loads_only_the_c_runtime_owns_nothing_more(tmp_path):
    need("cc", None if shutil.which("cc") else "no C compiler (`make provision` installs gcc)")
    (tmp_path / "hello.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-o", str(tmp_path / "hello"), str(tmp_path / "hello.c")], check=True)
    assert own_bytes(str(tmp_path / "hello")) == ((tmp_path / "hello").stat().st_size, 0)


def test_copied_libraries_land_at_their_own_paths(tmp_path):
    need("curl", None if shutil.which("curl") else "no curl (`make provision` installs it)")
    curl = os.path.realpath(shutil.which("curl"))
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["sh", "-c", rootfs.copy_libraries('"$1"', '"$2"'), "copy", curl, str(root)], check=True)
    assert len(ldd_paths(curl)) > 5
    for lib in ldd_paths(curl):
        assert (root / lib.lstrip("/")).is_file(), lib
