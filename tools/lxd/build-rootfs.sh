#!/bin/sh
# Build (once) the root filesystem of edgebench's LXD base image and its two import tarballs.
#
#   build-rootfs.sh DIR SUITE MIRROR RECIPE
#
# DIR     cache directory on the target (e.g. ~/.cache/edgebench/lxd/debian-bookworm-amd64);
#         holds rootfs/, metadata.tar, rootfs.tar, fingerprint, recipe, debootstrap.log
# SUITE   Debian/Ubuntu suite to bootstrap (bookworm)
# MIRROR  the archive debootstrap downloads from (read from the target's apt sources)
# RECIPE  identifies this script's version and options; a different value rebuilds
#
# `debootstrap --variant=minbase --include=busybox`, then: a minimal /sbin/init (below),
# documentation and locales removed. Nothing is downloaded except from MIRROR. When DIR already
# holds tarballs made by the same RECIPE, nothing is done. Prints key=value lines:
#   built=yes|no  fingerprint=<sha256 of metadata.tar + rootfs.tar, LXD's split-image fingerprint>
#   rootfs_bytes=  metadata=  rootfs=  debootstrap_s=
set -eu
dir=$1; suite=$2; mirror=$3; recipe=$4
export PATH="$PATH:/usr/sbin:/sbin"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock -w 1800 9  # one build at a time; a second caller waits and then finds the cache

if [ -f "$dir/fingerprint" ] && [ -f "$dir/rootfs.tar" ] && [ -f "$dir/metadata.tar" ] \
   && [ "$(cat "$dir/recipe" 2>/dev/null)" = "$recipe" ]; then
  echo "built=no"
else
  command -v debootstrap >/dev/null || { echo "debootstrap is not installed; apt-get install debootstrap" >&2; exit 1; }
  rm -f "$dir/fingerprint" "$dir/recipe"
  new="$dir/rootfs.new"
  rm -rf "$new"
  t0=$(date +%s)
  if ! debootstrap --variant=minbase --include=busybox "$suite" "$new" "$mirror" >"$dir/debootstrap.log" 2>&1; then
    tail -n 15 "$dir/debootstrap.log" >&2
    echo "debootstrap of $suite from $mirror failed (full log: $dir/debootstrap.log)" >&2
    exit 1
  fi
  t1=$(date +%s)
  echo "debootstrap_s=$((t1 - t0))"

  # Slim it the way container base images are: no docs, manuals or locales, no package caches.
  rm -rf "$new"/usr/share/doc/* "$new"/usr/share/man/* "$new"/usr/share/info/* \
         "$new"/usr/share/locale/* "$new"/var/cache/apt/*.bin "$new"/var/cache/apt/archives/*.deb \
         "$new"/var/lib/apt/lists/*_Packages "$new"/var/log/*.log
  mkdir -p "$new/opt/edgebench" "$new/etc/edgebench"

  # PID 1. liblxc has mounted /proc, /sys, /dev and brought lo up before it runs. It starts
  # the service edgebench defined (/etc/edgebench/service: a shell fragment that exports the
  # environment and execs the app; output to /var/log/edgebench/), then asks LXD's dnsmasq for
  # an address on eth0 in the background, reaps orphans, and on SIGPWR (`lxc stop`) or SIGTERM
  # ends every process. No services of its own, no getty: the boot is one fork for the app.
  cat >"$new/sbin/init" <<'INIT'
#!/bin/sh
# edgebench's minimal init for LXD system containers (tools/lxd/build-rootfs.sh).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
halt() { kill -TERM -1 2>/dev/null; exit 0; }
trap halt TERM INT PWR HUP
if [ -r /etc/edgebench/service ]; then
  (. /etc/edgebench/service) >/var/log/edgebench/app.out 2>/var/log/edgebench/app.err </dev/null &
  echo $! >/var/log/edgebench/app.pid
fi
if [ -e /sys/class/net/eth0 ]; then
  busybox udhcpc -i eth0 -f -S -s /etc/edgebench/udhcpc.sh >/dev/null 2>&1 </dev/null &
fi
# dash's wait reaps any child, including orphans re-parented to PID 1.
while :; do sleep 86400 & wait $!; done
INIT
  # Runs (through `lxc exec`) until the service has exited, then exits 1: a launcher that
  # stays alive while the app runs and fails as soon as it dies.
  cat >"$new/usr/local/sbin/edgebench-wait-app" <<'WAIT'
#!/bin/sh
i=0
while [ ! -s /var/log/edgebench/app.pid ]; do
  i=$((i + 1)); [ "$i" -gt 100 ] && { echo "edgebench: no service was started" >&2; exit 2; }
  sleep 0.05
done
tail -f /dev/null --pid="$(cat /var/log/edgebench/app.pid)" -s 0.2 2>/dev/null
echo "edgebench: the service exited" >&2
exit 1
WAIT
  cat >"$new/etc/edgebench/udhcpc.sh" <<'DHCP'
#!/bin/sh
# Applies busybox udhcpc's lease to $interface (see /sbin/init).
case "$1" in
  deconfig) busybox ip addr flush dev "$interface"; busybox ip link set "$interface" up ;;
  bound|renew)
    busybox ip addr flush dev "$interface"
    busybox ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -z "${router:-}" ] || busybox ip route replace default via "${router%% *}" dev "$interface"
    : >/etc/resolv.conf
    for d in ${dns:-}; do echo "nameserver $d" >>/etc/resolv.conf; done ;;
esac
exit 0
DHCP
  mkdir -p "$new/var/log/edgebench"
  chmod 755 "$new/usr/local/sbin/edgebench-wait-app"
  chmod 755 "$new/sbin/init" "$new/etc/edgebench/udhcpc.sh"
  echo "edgebench" >"$new/etc/hostname"
  printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$new/etc/hosts"

  rm -rf "$dir/rootfs"
  mv "$new" "$dir/rootfs"

  # LXD's split image: metadata.yaml in one tarball, the filesystem (at the top level) in the other.
  # Uncompressed: the dir pool unpacks the image for every new container, and gunzip would be
  # most of that time.
  arch=$(uname -m)
  release=$(. "$dir/rootfs/etc/os-release" && echo "${VERSION_ID:-$suite}")
  os=$(. "$dir/rootfs/etc/os-release" && echo "${ID:-linux}")
  cat >"$dir/metadata.yaml" <<META
architecture: $arch
creation_date: $(date +%s)
properties:
  description: "edgebench $os $suite $arch (debootstrap minbase, minimal init)"
  os: $os
  release: "$release"
  architecture: $arch
  edgebench: base
  edgebench.recipe: "$recipe"
templates: {}
META
  tar -C "$dir" -cf "$dir/metadata.tar.new" metadata.yaml
  tar -C "$dir/rootfs" --numeric-owner -cf "$dir/rootfs.tar.new" .
  mv "$dir/metadata.tar.new" "$dir/metadata.tar"
  mv "$dir/rootfs.tar.new" "$dir/rootfs.tar"
  cat "$dir/metadata.tar" "$dir/rootfs.tar" | sha256sum | cut -d' ' -f1 >"$dir/fingerprint"
  echo "$recipe" >"$dir/recipe"
  echo "built=yes"
fi
echo "fingerprint=$(cat "$dir/fingerprint")"
echo "rootfs_bytes=$(du -sb "$dir/rootfs" | cut -f1)"
echo "metadata=$dir/metadata.tar"
echo "rootfs=$dir/rootfs.tar"
