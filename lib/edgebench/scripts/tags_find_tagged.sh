# shellcheck shell=sh
# [(pid, comm)] of live processes whose environment holds the line $1 (or one starting with it).
# Sent by edgebench.runtimes.tags (_FIND_TAGGED) as the text of one `sh -c`.
tag=$1; match=-qxF; [ "$2" = prefix ] && { match=-q; tag="^$tag"; }
for e in /proc/[0-9]*/environ; do
  p=${e#/proc/}; p=${p%/environ}
  tr '\0' '\n' <"$e" 2>/dev/null | grep "$match" -- "$tag" || continue
  s=$(awk '/^State:/{print $2}' "/proc/$p/status" 2>/dev/null)
  if [ -z "$s" ] || [ "$s" = Z ]; then continue; fi
  echo "$p $(cat "/proc/$p/comm" 2>/dev/null)"
done
