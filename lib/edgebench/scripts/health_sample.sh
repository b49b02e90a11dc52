# shellcheck shell=sh
# One sample for edgebench.tools.health (sample.sample_script): every sensor the probe found, read
# with the `read` builtin; nothing is forked but vcgencmd, since the device runs this every few
# seconds during a measurement. One `key<TAB>value...` line per reading; an unreadable file
# prints an empty value, which the parser reports as an error, never as a zero.
# $1: procfs, $2: sysfs, $3: vcgencmd's path ("" when the device has none),
# $4: the thermal zones to read (thermal_zone0 ...), $5: the CPUs with cpufreq (cpu0 ...)
P=$1 S=$2 V=$3 ZONES=$4 CPUS=$5
rd() { v=; { read -r v < "$1"; } 2>/dev/null; }
rd "$P/stat"; printf 'stat\t%s\n' "$v"
rd "$P/loadavg"; printf 'loadavg\t%s\n' "$v"
# The names are the device's own directory names (thermal_zoneN, cpuN): no spaces to split on.
for z in $ZONES; do
  rd "$S/class/thermal/$z/temp"; printf 'temp\t%s\t%s\n' "$z" "$v"
done
for c in $CPUS; do
  d=$S/devices/system/cpu/$c/cpufreq
  rd "$d/scaling_cur_freq"; a=$v; rd "$d/scaling_governor"; b=$v; rd "$d/scaling_max_freq"
  printf 'freq\t%s\t%s\t%s\t%s\n' "$c" "$a" "$b" "$v"
done
if [ -n "$V" ]; then
  t=$("$V" get_throttled 2>&1) || t="exit $?: $t"
  printf 'throttled\t%s\n' "$t"
fi
