"""Shell fragments for the root file systems edgebench assembles around a binary it did not
build (Docker's offline bundles, linux-vm's initramfs): the shared libraries it loads and the
users it may look up, so that the same binary runs there as on the target."""

from __future__ import annotations

# The libraries `ldd` names with a path, and the dynamic loader (its line has no "=>").
LDD_PATHS = r"""awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'"""


# Files a binary or its libraries read by a path compiled into them. Debian's nodejs is built with
# externalized builtins: libnode loads part of Node itself (cjs-module-lexer, undici, acorn) from
# /usr/share/nodejs at start, and without them node dies ("Cannot load externalized builtin").
# Node from nodejs.org or a distribution that bundles them names none of these paths.
_COMPILED_IN_FILES = r"""xargs grep -aho '/usr/share/nodejs/[[:alnum:]@/._-]*\.js' 2>/dev/null | sort -u"""


def compiled_in_files(binary: str) -> str:
    """A shell pipeline printing the files `binary` or the libraries it loads name by path and
    need at run time (see _COMPILED_IN_FILES), those that exist."""
    return (f"{{ echo {binary}; ldd {binary} 2>/dev/null | {LDD_PATHS}; }} | {_COMPILED_IN_FILES} |\n"
            "  while read -r f; do [ -f \"$f\" ] && echo \"$f\"; done")


# The C and C++ runtime every Linux system has: a self-contained build (nodejs.org's node, the
# paper's pkg binary) still loads these from the system.
_SYSTEM_RUNTIME = r"""grep -vE '/(ld-linux[^/]*|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so'"""


def own_bytes(binary: str) -> str:
    """A shell pipeline printing two numbers: the bytes of `binary`, and of the libraries it loads
    beyond the system's C runtime with the files they name (Debian's node is a 20 KB launcher;
    its libnode, ICU and the rest are what a self-contained node carries inside)."""
    loaded = compiled_in_files('"$b"')
    return (f"b=$(readlink -f {binary}); printf '%s ' \"$(stat -L -c %s \"$b\")\"; "
            f"{{ ldd \"$b\" 2>/dev/null | {LDD_PATHS} | {_SYSTEM_RUNTIME}; {loaded}; }} |\n"
            "  sort -u | while read -r f; do stat -L -c %s \"$f\"; done | awk '{s += $1} END {print s + 0}'")


def copy_libraries(binary: str, root: str) -> str:
    """Copy what `binary` loads into `root` at the same paths (shell words, already quoted): its
    libraries and the files they read by a compiled-in path. A static binary loads nothing:
    ldd's complaint about it is not an error."""
    return (f"for lib in $(ldd {binary} 2>/dev/null | {LDD_PATHS}) $({compiled_in_files(binary)}); do\n"
            f"  [ -e {root}\"$lib\" ] || cp --parents -L \"$lib\" {root}/\n"
            "done\n")


def copy_folder_libraries(folder: str, root: str) -> str:
    """The same for every shared object in `folder` (Python's extension modules)."""
    return (f"for lib in $(find {folder} -name '*.so*' -type f -exec ldd {{}} + 2>/dev/null | grep -v ':$' |\n"
            f"             {LDD_PATHS} | sort -u); do\n"
            f"  [ -e {root}\"$lib\" ] || cp --parents -L \"$lib\" {root}/\n"
            "done\n")


def minimal_users(root: str) -> str:
    """/etc/passwd and /etc/group with the users a program may look up (nginx asks for its
    worker's user even as root); no shell, no home."""
    return (f"mkdir -p {root}/etc\n"
            r"printf 'root:x:0:0:root:/:/nonexistent\nnobody:x:65534:65534:nobody:/:/nonexistent\n"
            rf"www-data:x:33:33:www-data:/:/nonexistent\n' >{root}/etc/passwd" "\n"
            rf"printf 'root:x:0:\nnogroup:x:65534:\nwww-data:x:33:\n' >{root}/etc/group" "\n")
