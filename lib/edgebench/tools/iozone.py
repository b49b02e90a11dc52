"""IOZone, as paper 003 ran it: Debian packages it as iozone3 in non-free (Ubuntu in multiverse),
a component most devices do not enable. Where the target has an `iozone` command (Raspberry Pi OS
enables non-free), that one runs. Elsewhere provisioning fetches the package with `apt-get
download` through a private sources list naming that one component of the device's own mirror,
and unpacks it into the workspace: the device's apt sources and installed packages stay as they
were (as linux-vm's guest kit is fetched)."""

from __future__ import annotations

from edgebench.errors import MissingTool
from edgebench.runtimes.lxd_image import target_release
from edgebench.targets import Target

PACKAGE = "iozone3"
# The component that carries iozone3, per distribution (os-release ID).
COMPONENT = {"debian": "non-free", "raspbian": "non-free", "ubuntu": "multiverse"}

# $1 workspace folder, $2 mirror, $3 suite, $4 component. apt reads only the private list, keeps
# its lists and downloads in the folder, and installs nothing.
_FETCH = r"""
set -e
d=$1; mkdir -p "$d/apt/lists/partial" "$d/apt/cache/archives/partial" "$d/debs" "$d/root"
echo "deb $2 $3 $4" > "$d/apt/sources.list"
o="-o Dir::Etc::SourceList=$d/apt/sources.list -o Dir::Etc::SourceParts=/nonexistent
   -o Dir::State::Lists=$d/apt/lists -o Dir::Cache=$d/apt/cache -o APT::Sandbox::User=root"
apt-get $o -q update >&2
cd "$d/debs" && rm -f ./*.deb
apt-get $o -q download iozone3 >&2
for f in ./*.deb; do dpkg-deb -x "$f" "$d/root"; done
test -x "$d/root/usr/bin/iozone"
"""


def folder(target: Target) -> str:
    return f"{target.workspace}/iozone"


def unpacked(target: Target) -> str:
    return f"{folder(target)}/root/usr/bin/iozone"


def binary(target: Target) -> str:
    """The iozone a run uses: the target's own command, else the one provisioning unpacked."""
    found = target.which("iozone")
    if found:
        return found
    if target.run(["test", "-x", unpacked(target)], check=False).ok:
        return unpacked(target)
    raise MissingTool("iozone", f"{target.name} has no iozone: `make provision TARGET={target.name}` fetches "
                                f"Debian's {PACKAGE} (non-free) into the workspace without changing apt's sources")


def install(prep) -> None:
    """Provisioning's step: fetch iozone3 unless the target has an iozone already."""
    target = prep.target
    if target.which("iozone") or target.run(["test", "-x", unpacked(target)], check=False).ok:
        return
    os_id, suite, mirror = target_release(target)
    component = COMPONENT.get(os_id)
    if component is None:
        prep.missing["iozone"] = f"no known component carries {PACKAGE} on {os_id}: install iozone by hand"
        return
    if prep.check:
        prep.would(f"fetch {PACKAGE} from {mirror} {suite} {component} into {folder(target)} (apt-get download)",
                   "iozone", "not fetched; would fetch it")
        return
    r = target.run([*prep.sudo, "sh", "-c", _FETCH, "fetch-iozone", folder(target), mirror, suite, component],
                   timeout=600, check=False)
    if not r.ok:
        prep.fail("iozone", f"fetching {PACKAGE} from {mirror} {suite} {component} failed (exit {r.exit_code}): "
                            f"{r.stderr.strip()[-300:]}")
        return
    prep.did(f"fetched {PACKAGE} from {mirror} {suite} {component} into {folder(target)}")
