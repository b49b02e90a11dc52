# shellcheck shell=sh
# $1: kit directory. Downloads the distribution's current generic kernel package and
# busybox-static, unpacks them into $1/root, and prints the kernel, its version and busybox.
# Sent by edgebench.runtimes.linux_guest (FETCH_KIT) as the text of one `sh -c`.
set -e
kit=$1; arch=$2
mkdir -p "$kit/debs" "$kit/root"
cd "$kit/debs"
meta=linux-image-$arch
kernel_pkg=$(apt-cache depends --important "$meta" 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$kernel_pkg" ] || { echo "no kernel package behind $meta in apt's lists" >&2; exit 3; }
# apt's sandbox user cannot write into root's folders; the download itself is the same.
chmod 777 "$kit/debs"
apt-get download -q "$kernel_pkg" busybox-static >&2
for d in *.deb; do dpkg-deb -x "$d" "$kit/root"; done
rm -f "$kit/debs"/*.deb
ls "$kit"/root/boot/vmlinuz-* >/dev/null
