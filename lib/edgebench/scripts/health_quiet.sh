# shellcheck shell=sh
# The quiet check before a measured point, for edgebench.tools.health (quiet.quiet_script): the
# CPU time of all CPUs over a window of $6 seconds from /proc/stat, the CPU time of every process
# before and after (p0/p1 lines: pid, utime + stime, comm), the check's own CPU time in the window
# (o0/o1) and /proc/uptime around both process scans (u0/u1). Nothing is printed until the window
# has closed: output on its way would keep the device's sshd busy in it, and under emulation that
# alone marked most points busy. health_sample.sh follows it in the same `sh -c`, with the same
# arguments.
# $1: procfs, $6: the window in seconds ($2-$5 are health_sample.sh's)
P=$1 WINDOW_S=$6
rd() { v=; { read -r v < "$1"; } 2>/dev/null; }
# pid, utime + stime (fields 14 and 15) and comm of every process; comm may hold spaces and ')'.
scan() {
  for f in "$P"/[0-9]*/stat; do
    { read -r l < "$f"; } 2>/dev/null || continue
    c=${l#*\(}; c=${c%) *}
    set -f
    # shellcheck disable=SC2086  # the fields after comm, split on purpose (set -f: never a glob)
    set -- ${l##*) }
    set +f
    [ $# -ge 13 ] || continue
    # The check's own children (its scans' subshells) are not "other processes".
    [ "$2" = "$$" ] && continue
    p=${f%/stat}
    printf 'p%s\t%s\t%s\t%s\n' "$ph" "${p##*/}" "$((${12}+${13}))" "$c"
  done
}
# The check's own CPU ticks, its waited-for children's (`sleep`) included: inside the window.
own() {
  o=
  { read -r l < "$P/$$/stat"; } 2>/dev/null || return 0
  set -f
  # shellcheck disable=SC2086  # the fields after comm, split on purpose (set -f: never a glob)
  set -- ${l##*) }
  set +f
  [ $# -ge 15 ] && o=$((${12}+${13}+${14}+${15}))
}
rd "$P/uptime"; u0=${v%% *}
s0=$(ph=0; scan); rd "$P/stat"; q0=$v; own; o0=$o
sleep "$WINDOW_S"; rd "$P/stat"; q1=$v; own; o1=$o
s1=$(ph=1; scan); rd "$P/uptime"; u1=${v%% *}
printf 'self\t%s\nq0\t%s\nq1\t%s\no0\t%s\no1\t%s\nu0\t%s\nu1\t%s\n%s\n%s\n' \
  "$$" "$q0" "$q1" "$o0" "$o1" "$u0" "$u1" "$s0" "$s1"
