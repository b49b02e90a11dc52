# shellcheck shell=sh
# Runs QEMU ("$@") with its serial console through `probe -stamp`, which copies it to stdout and
# writes each line with the host's clock at its arrival to $1 (the guest's clock is its own).
# Exits with the status a linux-vm guest's /init printed for the app (linux_guest.MARK), or 125
# when it printed none (the guest crashed, QEMU was killed, or the guest prints no status).
# $2: the probe on the target.
# Sent by edgebench.runtimes.vm (_STAMPED) as the text of one `sh -c`.
stamps=$1; probe=$2; shift 2
"$@" | "$probe" -stamp "$stamps"
code=$(tr -d '\r' <"$stamps" | sed -n 's/^[0-9]*[[:space:]]edgebench-guest: exit \([0-9][0-9]*\)$/\1/p' | tail -n 1)
exit "${code:-125}"
