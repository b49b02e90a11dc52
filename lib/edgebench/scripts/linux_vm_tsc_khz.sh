# shellcheck shell=sh
# The target's TSC frequency in kHz: the kernel's own calibration where dmesg is readable, else
# the first CPU's MHz (a constant-rate TSC counts at the nominal clock; close enough for a
# fallback the guest uses only when its own calibration fails).
# Sent by edgebench.runtimes.linux_vm (TSC_KHZ) as the text of one `sh -c`.
mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -n 1)
[ -n "$mhz" ] || mhz=$(sed -n 's/^cpu MHz[[:space:]]*: *\([0-9.]*\)$/\1/p' /proc/cpuinfo | head -n 1)
[ -n "$mhz" ] && awk -v m="$mhz" 'BEGIN { printf "%d\n", m * 1000 }'
