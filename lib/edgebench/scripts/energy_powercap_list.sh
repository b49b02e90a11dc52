# shellcheck shell=sh
# The powercap zones for edgebench.tools.energy (PowercapMeter.probe): one line per zone, its id,
# its name, "yes" if it has an energy_uj counter, and the counter's max_energy_range_uj (where it
# wraps). `nodir` when the device has no powercap class at all.
# $1: sysfs
d="$1/class/powercap"
[ -d "$d" ] || { printf 'nodir\n'; exit 0; }
for z in "$d"/*:*; do
  [ -e "$z" ] || continue
  printf '%s\t%s\t%s\t%s\n' "${z##*/}" "$(cat "$z/name" 2>/dev/null)" \
    "$([ -e "$z/energy_uj" ] && echo yes)" "$(cat "$z/max_energy_range_uj" 2>/dev/null)"
done
