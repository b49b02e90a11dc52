# shellcheck shell=sh
# $1: kit root. Prints the kernel file, its version, busybox's path and version line.
# Sent by edgebench.runtimes.linux_guest (DESCRIBE_KIT) as the text of one `sh -c`.
root=$1
# shellcheck disable=SC2012  # Debian's kernel file names: no spaces or newlines to trip ls
k=$(ls "$root"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
[ -n "$k" ] || exit 3
[ -x "$root/bin/busybox" ] || exit 4
echo "kernel=$k"
echo "version=${k##*/vmlinuz-}"
echo "busybox=$root/bin/busybox"
echo "busybox_version=$("$root/bin/busybox" 2>&1 | head -n 1 | sed 's/ multi-call binary.*//' | tr ' ' '_')"
