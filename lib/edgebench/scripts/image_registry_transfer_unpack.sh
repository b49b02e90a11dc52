# shellcheck shell=sh
# The layers fetched and unpacked the way a pull does, each step on its own clock: every blob over
# the same TLS path one after the other, then each decompressed (gzip, one thread) and extracted in
# order. Prints "edgebench-layers START FETCHED UNPACKED BYTES" (ns; compressed bytes).
# Sent by edgebench.runtimes.image_registry (_TRANSFER_UNPACK) as the text of one `sh -c`.
base=$1; ca=$2; out=$3; shift 3
trap 'rm -rf "$out"' EXIT
rm -rf "$out"; mkdir -p "$out/rootfs" || exit 1
t0=$(date +%s%N)
for d in "$@"; do curl -sSf --cacert "$ca" -o "$out/${d#*:}" "$base/$d" || exit 2; done
t1=$(date +%s%N)
for d in "$@"; do gzip -dc "$out/${d#*:}" | tar -x -C "$out/rootfs" || exit 3; done
t2=$(date +%s%N)
echo "edgebench-layers $t0 $t1 $t2 $(cat "$out"/[0-9a-f]* | wc -c)"
