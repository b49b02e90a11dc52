# shellcheck shell=sh
# After `lxc start`: the container's IPv4 on the bridge, then the relay from the target's port to
# it, in the background, tagged as the launch's process; then the launcher goes on as in "proxy".
# Sent by edgebench.runtimes.lxd (_FORWARD_LAUNCH) as the text of one `sh -c`.
lxc start "$1" || exit; date +%s%N >"$2"
name=$1 port=$3 cport=$4 relay=$5 log=$6 wait_s=$7; shift 7
ip=; end=$(( $(date +%s) + wait_s ))
while :; do
  ip=$(lxc list --format csv -c n4 "$name" | awk -F, -v n="$name" '$1 == n { split($2, a, " "); print a[1]; exit }')
  [ -n "$ip" ] && break
  [ "$(date +%s)" -ge "$end" ] && { echo "lxd: $name had no IPv4 address on its bridge after $wait_s s" >&2; exit 1; }
  sleep 0.1
done
EDGEBENCH_LAUNCH="$name" "$relay" -listen "0.0.0.0:$port" -to "$ip:$cport" >"$log" 2>&1 </dev/null &
exec "$@"
