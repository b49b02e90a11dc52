"""The base image of the LXD runtime, made on the target without an image server.

`ensure_image(target)` runs `tools/lxd/build-rootfs.sh` there: `debootstrap --variant=minbase`
of the target's own release (Debian 12 -> bookworm) from the mirror its apt sources name, plus
busybox and a minimal `/sbin/init` (lo up, DHCP on eth0 in the background, reaps orphans, ends
everything on SIGPWR/SIGTERM; no services: the app is started with `lxc exec`). The root
filesystem and the two import tarballs stay in a cache directory on the target, so the second
call only compares fingerprints. The image is imported under a stable alias
(`edgebench/debian-bookworm`) and reused while its fingerprint matches the cache; an older image
under that alias that edgebench made is replaced.

Overrides (read on the controlling machine, applied on the target):
  EDGEBENCH_LXD_CACHE   cache directory on the target (default ~/.cache/edgebench/lxd)
  EDGEBENCH_LXD_MIRROR  archive URL for debootstrap (default: the target's apt sources)
  EDGEBENCH_LXD_SUITE   release to bootstrap (default: the target's VERSION_CODENAME)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.parse
from dataclasses import dataclass, field

from edgebench.errors import ConfigError, EdgebenchError
from edgebench.paths import TOOLS_DIR
from edgebench.provisioning.needs import Need, Preparation, TargetNeeds, Version, tail
from edgebench.targets import Target, connect
from edgebench.scripts import shell_script

CACHE_ENV, MIRROR_ENV, SUITE_ENV = "EDGEBENCH_LXD_CACHE", "EDGEBENCH_LXD_MIRROR", "EDGEBENCH_LXD_SUITE"
BUILD_SCRIPT = TOOLS_DIR / "lxd" / "build-rootfs.sh"
# debootstrap over a slow mirror on a small device (on the emulated pi-arm64 under load, 30 minutes
# were not enough)
BUILD_TIMEOUT_S = 3600
IMPORT_TIMEOUT_S = 600
ALIAS_PREFIX = "edgebench/"
BASE_PROPERTY = "edgebench"  # images carrying properties.edgebench=base are edgebench's to replace

_SOURCES = shell_script("lxd_image_sources.sh")


@dataclass
class BaseImage:
    alias: str
    fingerprint: str
    size_bytes: int          # as LXD stores it (`lxc query /1.0/images/FP` .size): the tarballs
    rootfs_bytes: int        # the unpacked root filesystem (du -sb of the cache's rootfs/)
    suite: str
    mirror: str
    cache_dir: str           # on the target: rootfs/, metadata.tar, rootfs.tar, fingerprint
    built: bool              # debootstrap ran in this call
    imported: bool           # `lxc image import` ran in this call
    details: dict = field(default_factory=dict)

    @property
    def rootfs_dir(self) -> str:
        return f"{self.cache_dir}/rootfs"


@dataclass(frozen=True)
class AptSource:
    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]


def parse_apt_sources(text: str) -> list[AptSource]:
    """`deb` entries from sources.list (one-line) and *.sources (deb822) text, in order."""
    out: list[AptSource] = []
    stanza: dict[str, str] = {}

    def flush():
        if stanza and "deb" in stanza.get("types", "").split() and stanza.get("enabled", "yes") != "no":
            for uri in stanza.get("uris", "").split():
                out.append(AptSource(uri.rstrip("/"), tuple(stanza.get("suites", "").split()),
                                     tuple(stanza.get("components", "").split())))
        stanza.clear()

    for raw in text.splitlines():
        if raw.startswith("#file="):  # the next file (see _SOURCES): a stanza ends with its file
            flush()
            continue
        if raw.lstrip().startswith("#"):  # comments, also inside a deb822 stanza
            continue
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip():
            flush()
            continue
        words = line.split()
        if words[0] == "deb":  # one-line format: deb [opts] uri suite components...
            flush()
            rest = line.split(None, 1)[1].strip()
            if rest.startswith("["):
                rest = rest.split("]", 1)[1].strip() if "]" in rest else ""
            parts = rest.split()
            if len(parts) >= 2:
                out.append(AptSource(parts[0].rstrip("/"), (parts[1],), tuple(parts[2:])))
        elif words[0] == "deb-src":
            flush()
        elif ":" in words[0] and not raw[:1].isspace():
            key, _, value = line.partition(":")
            stanza[key.strip().lower()] = value.strip()
        elif raw[:1].isspace() and stanza:
            continue  # a continuation line (e.g. an inline Signed-By key)
    flush()
    return out


def choose_mirror(sources: list[AptSource], suite: str) -> str | None:
    """The archive that carries `suite` itself (not -security/-updates) with `main`."""
    for s in sources:
        if suite in s.suites and "main" in s.components and s.uri.startswith(("http://", "https://", "file:/")):
            return s.uri
    return None


def target_release(target: Target, suite: str | None = None, mirror: str | None = None) -> tuple[str, str, str]:
    """(os id, suite, mirror) for debootstrap: the arguments, else the environment overrides,
    else the target's own release and the apt source that carries it."""
    r = target.run(["sh", "-c", _SOURCES], timeout=30)
    meta = dict(line[1:].split("=", 1) for line in r.stdout.splitlines()
                if line.startswith("#") and "=" in line and not line.startswith("#file="))
    os_id = meta.get("os_id") or "linux"
    suite = suite or os.environ.get(SUITE_ENV) or meta.get("codename") or ""
    if not suite:
        raise ConfigError(f"{target.name}: /etc/os-release names no VERSION_CODENAME; set {SUITE_ENV} "
                          f"(e.g. bookworm) and {MIRROR_ENV} for the LXD base image")
    mirror = mirror or os.environ.get(MIRROR_ENV) or choose_mirror(parse_apt_sources(r.stdout), suite)
    if not mirror:
        raise ConfigError(f"{target.name}: no apt source for {suite!r} with component main; set "
                          f"{MIRROR_ENV} to a {os_id} archive URL debootstrap can use")
    return os_id, suite, mirror


def cache_root(target: Target) -> str:
    return os.environ.get(CACHE_ENV) or f"{target.workspace}/lxd"


def recipe_id(suite: str) -> str:
    """Changes when the build script or the release changes, so the cache rebuilds."""
    digest = hashlib.sha256(BUILD_SCRIPT.read_bytes()).hexdigest()[:16]
    return f"{suite}-{digest}"


def _alias_path(alias: str) -> str:
    return "/1.0/images/aliases/" + urllib.parse.quote(alias, safe="")


def lxc_query(target: Target, path: str, timeout: float = 30) -> dict | list | None:
    """`lxc query PATH` as JSON; None when LXD answers with an error (e.g. not found)."""
    r = target.run(["lxc", "query", path], timeout=timeout, check=False)
    if not r.ok:
        return None
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def parse_kv(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if re.match(r"^[a-z_]+=", line))


def ensure_image(target: Target, *, mirror: str | None = None, suite: str | None = None,
                 alias: str | None = None, cache: str | None = None) -> BaseImage:
    """The base image on the target's LXD: built and imported if missing, else reused."""
    if not target.which("lxc"):
        raise ConfigError(f"no lxc CLI on {target.name}; install lxd there (tools/lxd/setup.sh)")
    os_id, suite, mirror = target_release(target, suite, mirror)
    alias = alias or f"{ALIAS_PREFIX}{os_id}-{suite}"
    arch = target.facts()["arch"]
    cache_dir = f"{(cache or cache_root(target)).rstrip('/')}/{os_id}-{suite}-{arch}"
    recipe = recipe_id(suite)
    script = target.upload_if_changed(BUILD_SCRIPT, f"{target.workspace}/bin/lxd-build-rootfs.sh", mode="755")

    have_cache = target.run(["sh", "-c", '[ "$(cat "$1/recipe" 2>/dev/null)" = "$2" ] && [ -f "$1/fingerprint" ]',
                             "cached", cache_dir, recipe], check=False).ok
    if not have_cache and not target.is_root:
        raise ConfigError(f"building the LXD base image (debootstrap) needs root on {target.name}; "
                          "connect as root once, or run tools/lxd/setup.sh and edgebench.runtimes.lxd_image there")
    r = target.run([script, cache_dir, suite, mirror, recipe], timeout=BUILD_TIMEOUT_S, check=False)
    if r.exit_code is None:  # the timeout: the message said nothing after its colon
        raise EdgebenchError(f"building the LXD base image on {target.name} (debootstrap {suite} from {mirror}) "
                             f"did not finish within {BUILD_TIMEOUT_S} s (its log: {cache_dir}/debootstrap.log); "
                             f"run `make provision TARGET={target.name}` again on a quieter device, or give a "
                             f"nearer mirror ({MIRROR_ENV})")
    if not r.ok:
        raise EdgebenchError(f"building the LXD base image on {target.name} failed "
                             f"(debootstrap {suite} from {mirror}, exit {r.exit_code}):\n{r.stderr[-1500:]}")
    kv = parse_kv(r.stdout)
    fingerprint = kv["fingerprint"]

    imported = False
    current = lxc_query(target, _alias_path(alias))
    current_fp = current.get("target") if isinstance(current, dict) else None
    if current_fp != fingerprint:
        if current_fp:
            target.run(["lxc", "image", "alias", "delete", alias], check=False)
            _delete_if_ours_and_unaliased(target, current_fp)
        if lxc_query(target, f"/1.0/images/{fingerprint}") is not None:
            target.run(["lxc", "image", "alias", "create", alias, fingerprint])
        else:
            imp = target.run(["lxc", "image", "import", "-q", kv["metadata"], kv["rootfs"], "--alias", alias],
                             timeout=IMPORT_TIMEOUT_S, check=False)
            if not imp.ok:
                raise EdgebenchError(f"lxc image import on {target.name} failed:\n{imp.stderr[-1500:]}")
            imported = True
    info = lxc_query(target, f"/1.0/images/{fingerprint}") or {}
    if info.get("fingerprint") != fingerprint:
        raise EdgebenchError(f"LXD on {target.name} has no image {fingerprint[:12]} after import")
    return BaseImage(alias, fingerprint, int(info.get("size") or 0), int(kv.get("rootfs_bytes") or 0),
                     suite, mirror, cache_dir, built=kv.get("built") == "yes", imported=imported,
                     details={"debootstrap_s": int(kv["debootstrap_s"]) if "debootstrap_s" in kv else None,
                              "recipe": recipe, "os": os_id, "arch": arch})


def _delete_if_ours_and_unaliased(target: Target, fingerprint: str) -> None:
    info = lxc_query(target, f"/1.0/images/{fingerprint}")
    if isinstance(info, dict) and (info.get("properties") or {}).get(BASE_PROPERTY) == "base" \
            and not info.get("aliases"):
        target.run(["lxc", "image", "delete", fingerprint], check=False)


def main() -> None:  # python -m edgebench.runtimes.lxd_image [TARGET]: build/import ahead of a run
    import sys
    with connect(sys.argv[1] if len(sys.argv) > 1 else "local") as target:
        image = ensure_image(target)
        print(f"{image.alias} {image.fingerprint} size={image.size_bytes} rootfs={image.rootfs_bytes} "
              f"built={image.built} imported={image.imported} cache={image.cache_dir}")


if __name__ == "__main__":
    main()


# -- what `make provision` prepares for the LXD runtime ---------------------------------------

NEEDS = TargetNeeds(
    "lxd runtime",
    (Need("lxd", (("lxd", "lxc"),), client="lxc"),
     Need("iptables", (("iptables",), ("nft",))),  # LXD's bridge takes iptables or nft
     Need("dnsmasq-base", (("dnsmasq",),)),        # DHCP on LXD's bridge (a Recommends of lxd)
     Need("debootstrap", (("debootstrap",),))),    # the base image, without an image server
    (Version("lxd", ("lxd", "--version")), Version("dnsmasq", ("dnsmasq", "--version")),
     Version("debootstrap", ("debootstrap", "--version"))),
    ("LXD (lxd, lxc) with dnsmasq", "debootstrap"))
SETUP_SCRIPT = TOOLS_DIR / "lxd" / "setup.sh"


def prepare_target(prep: Preparation) -> None:
    """tools/lxd/setup.sh (the daemon, a dir pool and a bridge; idempotent), then the base image."""
    if "lxd" not in prep.commands:
        prep.log("no lxd: LXD is not set up")
        return
    if prep.check:
        prep.did("tools/lxd/setup.sh (daemon, pool, bridge; idempotent) and the LXD base image "
                 "(debootstrap, cached)")
        return
    target = prep.target
    remote = target.upload_if_changed(SETUP_SCRIPT, f"{target.workspace}/bin/lxd-setup.sh", mode="755")
    prep.log("tools/lxd/setup.sh")
    r = target.run([*prep.sudo, "sh", remote], timeout=900, check=False)
    for line in r.stdout.strip().splitlines():
        prep.log(f"  {line}")
    if not r.ok:
        prep.fail("lxd setup", f"tools/lxd/setup.sh exited {r.exit_code}: {tail(r.stderr + r.stdout)}")
        return
    prep.log("LXD base image (debootstrap once, cached on the target)")
    try:
        image = ensure_image(target)
    except EdgebenchError as e:
        prep.fail("lxd image", str(e).strip().splitlines()[0][:300])
        return
    if image.built or image.imported:
        done = " and ".join(w for w, flag in (("built", image.built), ("imported", image.imported)) if flag)
        prep.did(f"LXD image {image.alias} {done}")
