# shellcheck shell=sh
# The memory+swap accounting the kernel offers, for swap=False.
# Sent by edgebench.runtimes.lxc (_SWAP_ACCOUNTING) as the text of one `sh -c`.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  ls /sys/fs/cgroup/*/memory.swap.max >/dev/null 2>&1 && echo v2-swap || echo v2
elif [ -f /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ]; then echo v1-memsw
else echo v1; fi
