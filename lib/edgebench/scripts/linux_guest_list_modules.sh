# shellcheck shell=sh
# $1: the kernel's module directory. Every module file below MODULE_DIRS (name, path, and no
# depends yet: reading them all spawns three programs per module, 400 s for Debian's 460 under
# TCG), then the built-in ones. "== end" says the listing is whole.
# Sent by edgebench.runtimes.linux_guest (LIST_MODULES) as the text of one `sh -c`.
base=$1; shift
for sub in "$@"; do
  [ -d "$base/kernel/$sub" ] || continue
  find "$base/kernel/$sub" -name '*.ko*' | while read -r f; do
    n=${f##*/}; printf '%s\t%s\t\n' "${n%%.ko*}" "$f"
  done
done
echo "== builtin"
cat "$base/modules.builtin" 2>/dev/null
echo "== end"
