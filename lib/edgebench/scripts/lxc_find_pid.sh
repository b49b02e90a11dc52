# shellcheck shell=sh
# The first process in the container's cgroup whose command line contains $2 (host PIDs).
# Sent by edgebench.runtimes.lxc (_FIND_PID) as the text of one `sh -c`.
init=$1; pat=$2
cg=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/"$init"/cgroup)
if [ -n "$cg" ]; then d=/sys/fs/cgroup/memory$cg
else d=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/"$init"/cgroup); fi
# cgroup paths hold no spaces (LXD names them after the container), a cgroup.procs file one pid a line.
# shellcheck disable=SC2044,SC2013
for f in $(find "$d" -name cgroup.procs 2>/dev/null); do
  for p in $(cat "$f"); do
    case "$(tr '\0' ' ' < /proc/"$p"/cmdline 2>/dev/null)" in *"$pat"*) echo "$p"; exit 0 ;; esac
  done
done
exit 1
