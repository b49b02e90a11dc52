"""A newc ("070701") cpio archive, the format Linux's and Unikraft's initrd loaders read: written
by the controlling machine, so a device needs no cpio tool to receive one."""

from __future__ import annotations

import stat
from pathlib import Path

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _entry(ino: int, name: str, mode: int, data: bytes = b"", mtime: int = 0) -> bytes:
    encoded = name.encode() + b"\0"
    fields = (ino, mode, 0, 0, 1 if not stat.S_ISDIR(mode) else 2, mtime, len(data), 0, 0, 0, 0, len(encoded), 0)
    header = MAGIC + b"".join(f"{v:08x}".encode() for v in fields)
    head = header + encoded
    return head + _pad4(len(head)) + data + _pad4(len(data))


def newc(files: dict[str, tuple[bytes | Path, int]], mtime: int = 0) -> bytes:
    """An archive of `files` {path inside: (content or a local file, permission bits)}; the
    folders on their paths are added first (0755). Paths are relative, without a leading '/'.
    mtime fixed: the same files make the same archive, byte for byte."""
    dirs: list[str] = []
    for path in files:
        if path.startswith("/") or not path or ".." in path.split("/"):
            raise ValueError(f"cpio path {path!r}: give a relative path inside the archive")
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in dirs:
                dirs.append(d)
    out, ino = [], 1
    for d in dirs:
        out.append(_entry(ino, d, stat.S_IFDIR | 0o755, mtime=mtime))
        ino += 1
    for path, (content, perm) in files.items():
        data = content.read_bytes() if isinstance(content, Path) else content
        out.append(_entry(ino, path, stat.S_IFREG | perm, data, mtime))
        ino += 1
    out.append(_entry(0, TRAILER, 0))
    return b"".join(out)


def list_newc(archive: bytes) -> list[tuple[str, int, bytes]]:
    """[(path, mode, content)] of a newc archive, up to its trailer (for checks and tests)."""
    out, pos = [], 0
    while True:
        if archive[pos:pos + 6] != MAGIC:
            raise ValueError(f"not a newc cpio entry at byte {pos}")
        fields = [int(archive[pos + 6 + 8 * i:pos + 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name_start = pos + 110
        name = archive[name_start:name_start + namesize - 1].decode()
        data_start = name_start + namesize + (-(110 + namesize) % 4)
        if name == TRAILER:
            return out
        out.append((name, mode, archive[data_start:data_start + size]))
        pos = data_start + size + (-size % 4)
