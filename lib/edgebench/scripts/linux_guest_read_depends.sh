# shellcheck shell=sh
# The `depends=` field of each module file given: only those a boot needs (name, path, depends).
# Sent by edgebench.runtimes.linux_guest (READ_DEPENDS) as the text of one `sh -c`.
for f in "$@"; do
  n=${f##*/}; n=${n%%.ko*}
  case $f in
    *.ko) deps=$(tr '\0' '\n' <"$f" | sed -n 's/^depends=//p' | head -n 1) ;;
    *.ko.xz) deps=$(xz -dc "$f" 2>/dev/null | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1) ;;
    *.ko.zst) deps=$(zstd -dc "$f" 2>/dev/null | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1) ;;
    *) continue ;;
  esac
  printf '%s\t%s\t%s\n' "$n" "$f" "$deps"
done
echo "== end"
