# shellcheck shell=sh
# QEMU's command line (NUL-separated, printed one per line), open files and thread affinity.
# Sent by edgebench.runtimes.qemu (_QEMU_STATE) as the text of one `sh -c`.
p=$1
echo "== cmdline"; tr '\0' '\n' <"/proc/$p/cmdline"
echo "== fds"; for f in "/proc/$p"/fd/*; do readlink "$f"; done 2>/dev/null
echo "== affinity"
for t in "/proc/$p"/task/*; do awk '/^Cpus_allowed_list/{print $2}' "$t/status"; done 2>/dev/null | sort -u
