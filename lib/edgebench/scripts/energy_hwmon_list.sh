# shellcheck shell=sh
# The hwmon power and energy sensors for edgebench.tools.energy (HwmonMeter.probe): a `device`
# line per hwmon directory (its name) and a `sensor` line per energy*_input, power*_input or
# power*_average file (with its label, if it has one). `nodir` when the device has no hwmon class.
# $1: sysfs
d="$1/class/hwmon"
[ -d "$d" ] || { printf 'nodir\n'; exit 0; }
for h in "$d"/hwmon*; do
  [ -e "$h" ] || continue
  b=${h##*/}
  printf 'device\t%s\t%s\n' "$b" "$(cat "$h/name" 2>/dev/null || cat "$h/device/name" 2>/dev/null)"
  # Older drivers (acpi_power_meter) keep their attributes in the parent device's directory.
  for f in "$h"/energy*_input "$h"/power*_input "$h"/power*_average \
           "$h"/device/energy*_input "$h"/device/power*_input "$h"/device/power*_average; do
    [ -e "$f" ] || continue
    s=${f#"$h"/}
    printf 'sensor\t%s\t%s\t%s\n' "$b" "$s" "$(cat "$h/${s%_*}_label" 2>/dev/null)"
  done
done
