# shellcheck shell=sh
# Sent by edgebench.runtimes.docker_daemon (_CONTROLLERS_ON_UNIFIED) as the text of one `sh -c`.
grep -q " $1 cgroup2 " /proc/mounts && grep -q " cgroup " /proc/mounts && cat "$1/cgroup.controllers" 2>/dev/null
true
