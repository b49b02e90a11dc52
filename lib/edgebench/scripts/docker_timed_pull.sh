# shellcheck shell=sh
# `docker pull`, timed on the device; its output names each layer's fate ("Pull complete",
# "Already exists").
# Sent by edgebench.runtimes.docker (_TIMED_PULL) as the text of one `sh -c`.
t0=$(date +%s%N); docker pull "$1"; rc=$?; t1=$(date +%s%N)
echo "edgebench-pull $rc $t0 $t1"
