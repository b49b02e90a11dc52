# shellcheck shell=sh
# The base image's tarballs fetched (exit 2 on failure) and imported (exit 3); prints
# `edgebench-import T0 T1 T2 BYTES` (ns from date +%s%N: start, fetched, imported).
# Sent by edgebench.runtimes.lxd (_FETCH_IMPORT) as the text of one `sh -c`.
scratch=$1; ca=$2; alias=$3; shift 3
rm -rf "$scratch"; mkdir -p "$scratch" || exit 1
t0=$(date +%s%N); i=0; files=""
for url in "$@"; do
  i=$((i + 1))
  curl -sSf --cacert "$ca" -o "$scratch/part$i.tar" "$url" || { rm -rf "$scratch"; exit 2; }
  files="$files $scratch/part$i.tar"
done
t1=$(date +%s%N)
# shellcheck disable=SC2086  # $files: one word per tarball, split on purpose
lxc image import -q $files --alias "$alias" >/dev/null || { rm -rf "$scratch"; exit 3; }
t2=$(date +%s%N)
# shellcheck disable=SC2086
size=$(cat $files | wc -c)
rm -rf "$scratch"
echo "edgebench-import $t0 $t1 $t2 $size"
