# shellcheck shell=sh
# cgroups named NAME_PREFIX* under edgebench/ in every mounted hierarchy (v1: one per controller).
# Sent by edgebench.runtimes.tags (_FIND_CGROUPS) as the text of one `sh -c`.
awk '$3 ~ /^cgroup2?$/ {print $2}' /proc/mounts | sort -u | while read -r root; do
  for d in "$root"/edgebench/"$1"*; do [ -d "$d" ] && echo "$d"; done
done
true
