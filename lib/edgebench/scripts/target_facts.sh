# shellcheck shell=sh
# The facts edgebench records about a device (edgebench.targets.Target.facts), all in one round
# trip: one `key=value` line each. A tool that is absent prints an empty value, which becomes a
# missing fact rather than an error.
echo "arch=$(uname -m)"
echo "kernel=$(uname -r)"
# The device's own file, read there: nothing for shellcheck to follow on this machine.
# shellcheck source=/dev/null
echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "hostname=$(hostname)"
echo "cores=$(nproc --all 2>/dev/null || getconf _NPROCESSORS_ONLN)"
echo "cores_online=$(getconf _NPROCESSORS_ONLN)"
echo "cpu_model=$(grep -m1 -E '^(model name|Model|Hardware)' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "memory_kb=$(awk '/^MemTotal:/{print $2}' /proc/meminfo)"
echo "swap_kb=$(awk '/^SwapTotal:/{print $2}' /proc/meminfo)"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo "cgroup_version=2";
elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then echo "cgroup_version=1";
else echo "cgroup_version="; fi
# A v1 machine may also mount the unified hierarchy (hybrid); perf's -G cgroups live there.
echo "cgroup_unified=$(awk '$3 == "cgroup2" && $2 != "/sys/fs/cgroup" {print $2; exit}' /proc/mounts)"
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  grep -qw memory /sys/fs/cgroup/cgroup.controllers && echo "memory_controller=yes" || echo "memory_controller=no"
else echo "memory_controller=$(awk '$1 == "memory" {print ($4 == 1 ? "yes" : "no")}' /proc/cgroups 2>/dev/null)"; fi
echo "perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"
echo "smt=$(cat /sys/devices/system/cpu/smt/active 2>/dev/null)"
# The last-level cache (KiB): STREAM's arrays must be 4x its size to measure memory, not cache.
echo "llc_kib=$(for d in /sys/devices/system/cpu/cpu0/cache/index*; do echo "$(cat "$d/level" 2>/dev/null) $(cat "$d/size" 2>/dev/null)"; done | sort -n | tail -1 | awk '{s = $2; print (s ~ /M$/) ? s * 1024 : s + 0}')"
echo "governor=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)"
# What a VM started here would get. An x86 /dev/kvm without vmx/svm in the CPU flags (a VM's
# nested /dev/kvm, as on this project's CI machine) runs no guest: QEMU falls back to TCG.
# arm64 shows no such flag: there /dev/kvm is the answer.
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  case "$(uname -m)" in
    x86_64|i?86) if grep -qwE 'vmx|svm' /proc/cpuinfo; then echo "kvm=yes"; else echo "kvm=no-guests"; fi ;;
    *) echo "kvm=yes" ;;
  esac
elif [ -e /dev/kvm ]; then echo "kvm=no-permission"; else echo "kvm=no"; fi
# An emulated device (make device) says so: its numbers measure QEMU's emulator, not a board.
echo "emulated_device=$(sed -n 's/^description=//p' /etc/edgebench-device 2>/dev/null)"
echo "uid=$(id -u)"
echo "user=$(id -un)"
echo "home=$HOME"
