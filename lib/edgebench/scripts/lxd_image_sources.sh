# shellcheck shell=sh
# Lists every apt source the target has, one-line and deb822 formats alike.
# Sent by edgebench.runtimes.lxd_image (_SOURCES) as the text of one `sh -c`.
# shellcheck disable=SC1091  # the target's own file, read there
. /etc/os-release 2>/dev/null
echo "#os_id=${ID:-}"
echo "#codename=${VERSION_CODENAME:-}"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -r "$f" ] || continue
  echo "#file=$f"
  cat "$f"
  echo
done
