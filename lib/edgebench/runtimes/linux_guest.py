"""What a plain Linux guest is made of, for the linux-vm runtime: the distribution's kernel and
a minimal initramfs that edgebench assembles around the app.

- the kit (`fetch_kit`, in provisioning): the distribution's generic kernel package
  (`linux-image-<arch>` on Debian and its derivatives) and `busybox-static`, downloaded with
  `apt-get download` and unpacked into the target's workspace. Nothing is installed: a kernel
  package would rewrite the target's own boot, and `busybox-static` conflicts with `busybox`.
- the modules the guest needs for its network (virtio-net over PCI or MMIO), in the order their
  `depends=` fields ask for, read from the module files themselves (no modinfo or depmod needed).
- the initramfs (`initramfs_script`): busybox, those modules, the app's binary (a Debian tool's
  with the libraries it loads and its data files) and an /init that brings up the network,
  runs the app with the environment and arguments given on the kernel command line (`eb_env=`,
  `eb_args=`, base64: one initramfs serves every start and
  every argument list), prints its exit status and powers the VM off. `busybox cpio` packs it.
"""

from __future__ import annotations

import base64
import posixpath
import shlex

from edgebench import rootfs
from edgebench.errors import EdgebenchError
from edgebench.scripts import shell_script

# Kernel modules for the guest's network, per QEMU transport; their dependencies follow from
# the module files.
NET_MODULES = {"pci": ("virtio_pci", "virtio_net"), "mmio": ("virtio_mmio", "virtio_net")}
# Where module candidates live below /lib/modules/<version>/kernel.
MODULE_DIRS = ("drivers/virtio", "drivers/net", "net/core")

# Console lines the guest's /init prints; the host reads them (exit status, boot phases).
MARK = "edgebench-guest:"
GUEST_IP, GUEST_GATEWAY = "10.0.2.15/24", "10.0.2.2"   # QEMU user-mode network's defaults

# Debian's architecture name for the kernel package, per `uname -m`.
DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}

FETCH_KIT = shell_script("linux_guest_fetch_kit.sh")

DESCRIBE_KIT = shell_script("linux_guest_describe_kit.sh")

LIST_MODULES = shell_script("linux_guest_list_modules.sh")

READ_DEPENDS = shell_script("linux_guest_read_depends.sh")
END = "== end"


def needed_modules(target, modules_dir: str, wanted: tuple[str, ...]):
    """({name: (path, depends)} for `wanted` and what they depend on, built-in names): the
    module files listed once, the dependencies read from the files a boot loads and no others.
    A listing cut short (a timeout) raises instead of reading as modules that are missing."""
    def run(script: str, name: str, *args: str) -> str:
        r = target.run(["sh", "-c", script, name, *args], timeout=600, check=False)
        if END not in r.stdout.splitlines():
            raise EdgebenchError(f"{name} in {modules_dir} on {target.name} did not finish "
                                 f"(exit {r.exit_code}): {(r.stderr or r.stdout).strip()[-300:]}")
        return r.stdout.replace(END + "\n", "")

    files, builtin = parse_modules(run(LIST_MODULES, "list-modules", modules_dir, *MODULE_DIRS))
    modules: dict[str, tuple[str, list[str]]] = {}
    frontier = list(wanted)
    while frontier:
        todo = list(dict.fromkeys(n for n in frontier if n in files and n not in modules and n not in builtin))
        if not todo:
            break
        read, _ = parse_modules(run(READ_DEPENDS, "read-depends", *(files[n][0] for n in todo)))
        modules.update({n: read.get(n, (files[n][0], [])) for n in todo})
        frontier = [d for n in todo for d in modules[n][1]]
    return modules, builtin


def parse_modules(text: str) -> tuple[dict[str, tuple[str, list[str]]], set[str]]:
    """({name: (path, depends)}, names built into the kernel) from LIST_MODULES' output.
    Names use underscores, as the kernel does (a file virtio-net.ko is module virtio_net)."""
    modules: dict[str, tuple[str, list[str]]] = {}
    builtin: set[str] = set()
    in_builtin = False
    for line in text.splitlines():
        if line == "== builtin":
            in_builtin = True
        elif in_builtin:
            name = line.strip().rsplit("/", 1)[-1].split(".ko")[0]
            if name:
                builtin.add(name.replace("-", "_"))
        elif line.strip():
            name, path, deps = (line.split("\t") + ["", ""])[:3]
            modules[name.replace("-", "_")] = (path, [d.replace("-", "_") for d in deps.split(",") if d])
    return modules, builtin


def load_order(wanted: tuple[str, ...], modules: dict[str, tuple[str, list[str]]],
               builtin: set[str]) -> list[str]:
    """The modules to insmod, dependencies first; built-in ones are left out. A module that is
    neither a file nor built in raises ValueError naming it."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in builtin or name in order:
            return
        if name in path:
            raise ValueError(f"module dependency cycle: {' -> '.join((*path, name))}")
        if name not in modules:
            raise ValueError(f"kernel module {name} is neither built in nor among the kernel's modules"
                             + (f" (needed by {path[-1]})" if path else ""))
        for dep in modules[name][1]:
            visit(dep, (*path, name))
        order.append(name)

    for name in wanted:
        visit(name, ())
    return order


def init_script() -> str:
    """The guest's /init (busybox sh as PID 1)."""
    return f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo "{MARK} init"
for w in $(cat /proc/cmdline); do
  case $w in
    eb_env=*) echo "${{w#eb_env=}}" | base64 -d >/etc/eb.env ;;
    eb_args=*) echo "${{w#eb_args=}}" | base64 -d >/etc/eb.args ;;
  esac
done
# As modprobe would: MODULE.PARAM=VALUE words of the command line go to that module (QEMU's
# microvm names its virtio-mmio devices that way).
for m in $(cat /etc/modules); do
  params=""
  for w in $(cat /proc/cmdline); do case $w in "$m".*=*) params="$params ${{w#"$m".}}" ;; esac; done
  insmod "/lib/modules/$m.ko" $params || echo "{MARK} insmod $m failed"
done
ip link set lo up
if ip link set eth0 up 2>/dev/null; then
  ip addr add {GUEST_IP} dev eth0; ip route add default via {GUEST_GATEWAY}
fi
while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done </etc/eb.env
set --
while IFS= read -r a; do set -- "$@" "$a"; done </etc/eb.args
mkdir -p /tmp/edgebench; cd /app
echo "{MARK} exec"
/app/program "$@"
echo "{MARK} exit $?"
poweroff -f
"""


def encode_words(words: list[str]) -> str:
    """Lines for eb_env= / eb_args=: one word per line, base64 (the kernel command line splits
    on spaces and knows no quoting). An empty list is an empty file."""
    for w in words:
        if "\n" in w:
            raise ValueError(f"a guest argument cannot hold a newline: {w!r}")
    return base64.b64encode("".join(f"{w}\n" for w in words).encode()).decode()


def kernel_cmdline(console: str, env: list[str], args: list[str], extra: tuple[str, ...] = ()) -> str:
    """quiet: the kernel's boot messages cost serial-console time under TCG; panic=-1 with
    -no-reboot turns a guest panic into QEMU's exit, which the probe sees at once. `extra`: the
    machine's own words (an early console, a TSC frequency). An empty list is left out (the
    guest's files stay empty)."""
    words = [f"console={console}", "quiet", "panic=-1", *extra]
    words += [f"eb_env={encode_words(env)}"] if env else []
    words += [f"eb_args={encode_words(args)}"] if args else []
    return " ".join(words)


def initramfs_script(busybox: str, program: str, modules: list[str], out: str, workdir: str,
                     files: tuple[str, ...] = ()) -> str:
    """A shell script that assembles the initramfs in `workdir` and packs it to `out` (newc,
    uncompressed: the kernel unpacks it without a decompressor, which under TCG is slow).
    `modules`: (name, path) lines as 'name<TAB>path' in load order. A dynamic `program` (Debian's
    nginx) brings the libraries it loads, at their paths; `files` (its data) go in at the same
    absolute paths as on the target."""
    q = shlex.quote
    lines = [
        "set -e",
        f"rm -rf {q(workdir)}",
        f"mkdir -p {q(workdir)}/bin {q(workdir)}/proc {q(workdir)}/sys {q(workdir)}/dev {q(workdir)}/tmp "
        f"{q(workdir)}/etc {q(workdir)}/app {q(workdir)}/lib/modules",
        f"cp {q(busybox)} {q(workdir)}/bin/busybox",
        f"cp -L {q(program)} {q(workdir)}/app/program",
        rootfs.copy_libraries(q(program), q(workdir)) + rootfs.minimal_users(q(workdir)).rstrip("\n"),
        *(f"mkdir -p {q(workdir + posixpath.dirname(f))} && cp -L {q(f)} {q(workdir + f)}" for f in files),
        f": >{q(workdir)}/etc/modules; : >{q(workdir)}/etc/eb.env; : >{q(workdir)}/etc/eb.args",
    ]
    for entry in modules:
        name, path = entry.split("\t")
        dest = f"{q(workdir)}/lib/modules/{name}.ko"
        if path.endswith(".ko.xz"):
            lines.append(f"xz -dc {q(path)} >{dest}")
        elif path.endswith(".ko.zst"):
            lines.append(f"zstd -qdc {q(path)} >{dest}")
        else:
            lines.append(f"cp {q(path)} {dest}")
        lines.append(f"echo {q(name)} >>{q(workdir)}/etc/modules")
    lines += [
        f"cat >{q(workdir)}/init <<'EDGEBENCH_INIT'\n{init_script()}EDGEBENCH_INIT",
        f"chmod 755 {q(workdir)}/init {q(workdir)}/app/program",
        f"(cd {q(workdir)} && find . | {q(busybox)} cpio -o -H newc 2>/dev/null) >{q(out)}.tmp",
        f"mv {q(out)}.tmp {q(out)}",
        f"rm -rf {q(workdir)}",
    ]
    return "\n".join(lines) + "\n"


def parse_exit(console: str) -> int | None:
    """The app's exit status as the guest's /init printed it; None when it never did."""
    code = None
    for line in console.replace("\r", "").splitlines():
        if line.startswith(f"{MARK} exit "):
            word = line[len(MARK) + 6:].strip()
            code = int(word) if word.isdigit() else code
    return code
