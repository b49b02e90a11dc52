"""A private image registry on the load-generator host, for first starts from an image that is
not on the device (paper 001: a cold container start pays the layers' download, their
single-threaded decompression and sequential extraction before runc starts anything).

Debian's `docker-registry` (the CNCF distribution registry), started for the run with a storage
folder and a TLS certificate made for it. The device's Docker trusts that certificate through
/etc/docker/certs.d/<address:port>/ca.crt, read per connection: no daemon restart and no
--insecure-registry. When the run ends (or fails, or is interrupted) the registry process, its
storage, its certificate and the device's trust entry all go. Images that are not Docker's (LXD's
tarballs) are kept in it as plain blobs, which the device fetches over HTTPS with curl.
"""

from __future__ import annotations

import json
import shlex
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from edgebench.errors import ConfigError, EdgebenchError, MissingTool
import edgebench.runtimes.tags as tags
from edgebench.targets import LOCAL_NAMES, CommandResult, LocalTarget, Target, connect
from edgebench.waiting import wait_until
from edgebench.scripts import shell_script

READY_WAIT_S = 30
PORT = 18500
TRUST_ROOT = "/etc/docker/certs.d"

_CONFIG = """version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {dir}/storage
  delete:
    enabled: true
http:
  addr: {listen}:{port}
  tls:
    certificate: {dir}/cert.pem
    key: {dir}/key.pem
"""

_START = shell_script("image_registry_start.sh")


@dataclass
class Registry:
    host: Target      # where it runs
    device: Target    # whose Docker pulls from it
    address: str      # how the device reaches it
    port: int
    dir: str          # its folder on `host`: config, certificate, storage, log
    certificate: str  # PEM text
    pid: int | None = None

    @property
    def name(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def url(self) -> str:
        return f"https://{self.name}"

    @property
    def trust_dir(self) -> str:
        return f"{TRUST_ROOT}/{self.name}"

    @property
    def ca_path(self) -> str:
        """The certificate on the device, where Docker (and curl, told so) reads it."""
        return f"{self.trust_dir}/ca.crt"

    def ref(self, repository: str, tag: str) -> str:
        return f"{self.name}/{repository}:{tag}"

    def describe(self) -> dict:
        version = self.host.run(["docker-registry", "--version"], check=False).stdout.strip()
        return {"host": self.host.name, "address": self.name, "tls": "certificate made for the run",
                "version": version or None, "same_machine": self.host is self.device}


def device_sudo(device: Target) -> list[str]:
    if device.is_root:
        return []
    if device.which("sudo") and device.run(["sudo", "-n", "true"], check=False).ok:
        return ["sudo", "-n"]
    raise ConfigError(f"first starts make {device.name}'s Docker trust the run's registry in {TRUST_ROOT}, "
                      "which needs root there or passwordless sudo; or leave 'first' out of caches")


def address_for(host: Target, device: Target) -> str:
    """How the device reaches the registry's host: loopback when they are one machine; else the
    address the device sees our SSH connection come from (registry here, device remote), or the
    address we reach the registry's host at."""
    if host is device:
        return "127.0.0.1"
    if host.is_local:
        seen = device.run(["sh", "-c", 'echo "${SSH_CONNECTION%% *}"'], check=False).stdout.strip()
        if not seen:
            raise ConfigError(f"cannot tell how {device.name} reaches this machine (no SSH_CONNECTION there); "
                              "run the registry on a host both reach: registry='user@host'")
        return seen
    return host.address


def check_registry_host(host: Target) -> None:
    for tool, package in (("docker-registry", "docker-registry"), ("openssl", "openssl")):
        if not host.which(tool):
            raise MissingTool(tool, f"first starts pull from a registry on {host.name}, which lacks {tool}; "
                                    f"`make provision` installs {package} (or apt-get install {package}), "
                                    "or leave 'first' out of caches")


_CERTIFICATE = shell_script("image_registry_certificate.sh")


@contextmanager
def serving(host: Target, device: Target, run_tag: str, port: int = PORT) -> Iterator[Registry]:
    """A registry on `host` that `device` pulls from over TLS, gone (with the trust) afterwards."""
    check_registry_host(host)
    sudo = device_sudo(device)
    address = address_for(host, device)
    listen = "127.0.0.1" if address == "127.0.0.1" else "0.0.0.0"
    port = host.free_port(port)
    folder = f"{host.workspace}/registry/{run_tag}"
    name = f"{address}:{port}"
    san = f"IP:{address}" if address.replace(".", "").isdigit() or ":" in address else f"DNS:{address}"
    registry = None
    try:
        host.run(["mkdir", "-p", f"{folder}/storage"])
        r = host.run(["sh", "-c", _CERTIFICATE, "registry-certificate", folder, san], timeout=60, check=False)
        if not r.ok:
            raise EdgebenchError(f"making the registry's certificate on {host.name} failed: {r.stderr[-400:]}")
        host.write_text(f"{folder}/config.yml", _CONFIG.format(dir=folder, listen=listen, port=port))
        registry = Registry(host, device, address, port, folder, host.read_text(f"{folder}/cert.pem"))
        device.run([*sudo, "mkdir", "-p", registry.trust_dir])
        device.run([*sudo, "sh", "-c", f"cat > {shlex.quote(registry.ca_path)}"], stdin=registry.certificate)
        host.run(["sh", "-c", _START, "start-registry", folder, f"{tags.LAUNCH_TAG}=eb-{run_tag}-registry"])
        registry.pid = int(host.read_text(f"{folder}/pid").strip())
        wait_ready(registry)
        yield registry
    finally:
        if registry and registry.pid:
            tags.kill_pid(host, registry.pid)
        device.run([*sudo, "rm", "-rf", f"{TRUST_ROOT}/{name}"], check=False)
        host.run(["rm", "-rf", folder], check=False)


def wait_ready(registry: Registry) -> None:
    """Until the device gets the registry's API root over TLS with the trusted certificate."""
    r: CommandResult | None = None

    def answered_or_gone() -> bool:
        nonlocal r
        r = registry.device.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                                 registry.ca_path, f"{registry.url}/v2/"], timeout=20, check=False)
        # A registry that exited will not answer later: no use waiting out the rest.
        return r.stdout.strip() == "200" or not tags.is_alive(registry.host, registry.pid)

    if wait_until(answered_or_gone, READY_WAIT_S, 0.2) and r.stdout.strip() == "200":
        return
    log = registry.host.read_text(f"{registry.dir}/registry.log", missing_ok=True) or ""
    raise EdgebenchError(f"the registry on {registry.host.name} ({registry.url}) did not answer "
                         f"{registry.device.name} within {READY_WAIT_S} s: curl said "
                         f"{(r.stderr or r.stdout).strip()[-200:]!r}; its log: {log.strip()[-400:]!r}")


_TRANSFER_UNPACK = shell_script("image_registry_transfer_unpack.sh")

MANIFEST_TYPES = ("application/vnd.docker.distribution.manifest.v2+json",
                  "application/vnd.oci.image.manifest.v1+json")
GZIP_LAYERS = ("application/vnd.docker.image.rootfs.diff.tar.gzip",
               "application/vnd.oci.image.layer.v1.tar+gzip")


def transfer_and_unpack(registry: Registry, ref: str, scratch: str) -> dict:
    """What a pull of `ref` does, in two timed parts on the device: the layers' transfer and their
    decompression and extraction (into `scratch`, removed afterwards). {"transfer_ms",
    "unpack_ms", "compressed_bytes", "layers", "command", "output"}."""
    repository, _, tag = ref.removeprefix(registry.name + "/").rpartition(":")
    device = registry.device
    r = device.run(["curl", "-sSf", "--cacert", registry.ca_path, "-H", f"Accept: {', '.join(MANIFEST_TYPES)}",
                    f"{registry.url}/v2/{repository}/manifests/{tag}"], timeout=60, check=False)
    if not r.ok:
        raise EdgebenchError(f"the registry's manifest of {ref} did not come: {r.stderr.strip()[-300:]}")
    layers = json.loads(r.stdout).get("layers", [])
    other = sorted({layer.get("mediaType") for layer in layers} - set(GZIP_LAYERS))
    if other:
        raise EdgebenchError(f"{ref} has layers that are not gzip tars ({', '.join(map(str, other))}); "
                             "their unpacking is not timed")
    argv = ["sh", "-c", _TRANSFER_UNPACK, "transfer-unpack", f"{registry.url}/v2/{repository}/blobs",
            registry.ca_path, scratch, *[layer["digest"] for layer in layers]]
    r = device.run(argv, timeout=900, check=False)
    fields = (r.stdout.strip().splitlines() or [""])[-1].split()
    if len(fields) != 5 or fields[0] != "edgebench-layers":
        step = {2: "transfer", 3: "decompression and extraction"}.get(r.exit_code, "preparation")
        raise EdgebenchError(f"the layers' {step} of {ref} on {device.name} failed: {r.stderr.strip()[-300:]}")
    t0, t1, t2, size = map(int, fields[1:])
    return {"transfer_ms": (t1 - t0) / 1e6, "unpack_ms": (t2 - t1) / 1e6, "compressed_bytes": size,
            "layers": len(layers), "command": " ".join(argv[:1]) + " <transfer-unpack script>",
            "output": r.stdout + r.stderr}


_PUSH_BLOB = shell_script("image_registry_push_blob.sh")


def push_blob(registry: Registry, repository: str, path: str) -> dict:
    """A file on the device into the registry as a blob (an image that is not Docker's: LXD's
    tarballs); {"digest", "bytes", "url"}."""
    r = registry.device.run(["sh", "-c", _PUSH_BLOB, "push-blob", registry.url, registry.ca_path, repository, path],
                            timeout=900, check=False)
    fields = (r.stdout.strip().splitlines() or [""])[-1].split()
    if not r.ok or len(fields) != 3 or fields[0] != "edgebench-blob":
        raise EdgebenchError(f"pushing {path} to the registry {registry.name} failed: {r.stderr.strip()[-400:]}")
    return {"digest": fields[1], "bytes": int(fields[2]), "url": f"{registry.url}/v2/{repository}/blobs/{fields[1]}"}


@contextmanager
def registry_host(target: Target, spec) -> Iterator[Target]:
    """Where the registry runs: the load-generator host `spec` ("local": this machine, which is
    the target itself when that is local too), connected for the run."""
    if isinstance(spec, Target):
        yield spec
        return
    if str(spec or "local").strip().lower() in LOCAL_NAMES:
        host = target if target.is_local else LocalTarget()
    else:
        host = connect(spec)
    try:
        yield host
    finally:
        if host is not target:
            host.close()
