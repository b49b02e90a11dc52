# shellcheck shell=sh
# What a device has for edgebench.tools.health (device.probe): the CPU count and clock tick, the
# board's model, every thermal zone with its trip points, every CPU's cpufreq, and whether
# vcgencmd answers. One `key<TAB>value...` line per fact; a sensor that is absent prints nothing.
# $1: sysfs, $2: procfs, $3: vcgencmd (a command name or path)
S=$1 P=$2 V=$3
rd() { v=; { read -r v < "$1"; } 2>/dev/null; }
printf 'cpus\t%s\n' "$(grep -c '^cpu[0-9]' "$P/stat" 2>/dev/null)"
printf 'clk_tck\t%s\n' "$(getconf CLK_TCK 2>/dev/null)"
printf 'model\t%s\n' "$({ tr -d '\000\t\n' < "$S/firmware/devicetree/base/model"; } 2>/dev/null)"
if [ -d "$S/class/thermal" ]; then
  printf 'thermal_dir\n'
  for z in "$S"/class/thermal/thermal_zone*; do
    [ -e "$z" ] || continue
    rd "$z/type"; ty=$v; rd "$z/temp"
    printf 'zone\t%s\t%s\t%s\n' "${z##*/}" "$ty" "$v"
    for tp in "$z"/trip_point_*_type; do
      [ -e "$tp" ] || continue
      rd "$tp"; k=$v; rd "${tp%_type}_temp"; n=${tp##*/trip_point_}
      printf 'trip\t%s\t%s\t%s\t%s\n' "${z##*/}" "${n%_type}" "$k" "$v"
    done
  done
fi
[ -d "$S/devices/system/cpu" ] && printf 'cpu_dir\n'
for c in "$S"/devices/system/cpu/cpu[0-9]*; do
  [ -d "$c/cpufreq" ] || continue
  f=$c/cpufreq
  rd "$f/cpuinfo_max_freq"; mx=$v; rd "$f/scaling_governor"; g=$v; rd "$f/scaling_max_freq"
  printf 'cpufreq\t%s\t%s\t%s\t%s\n' "${c##*/}" "$mx" "$g" "$v"
done
if p=$(command -v "$V" 2>/dev/null); then
  out=$("$V" get_throttled 2>&1); rc=$?
  printf 'vcgencmd\t%s\t%s\t%s\n' "$p" "$rc" "$(printf '%s' "$out" | tr '\t\n' '  ')"
fi
