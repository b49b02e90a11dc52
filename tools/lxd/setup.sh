#!/bin/sh
# Make LXD usable for edgebench on a Debian machine; safe to run again (each step checks first).
#
#   1. install lxd, dnsmasq-base and debootstrap from the configured apt mirror, if missing;
#   2. start the LXD daemon if `lxc query /1.0` gets no answer (systemd's unit when systemd is
#      PID 1, otherwise `lxd --group lxd` in the background, logging to $LXD_LOG);
#   3. if LXD has no storage pool: `lxd init --preseed` with a `dir` pool and a NAT'ed bridge;
#      if the pool exists, only add what is missing (bridge, the default profile's devices).
#
# Downloads nothing except Debian packages from the apt mirror. The container image itself is
# built by edgebench on first use (debootstrap from the same mirror; lib/edgebench/lxd_image.py,
# tools/lxd/build-rootfs.sh), or ahead of time with `python -m edgebench.lxd_image [TARGET]`.
#
# Environment (all optional):
#   EDGEBENCH_LXD_POOL    storage pool name        (default: default)
#   EDGEBENCH_LXD_BRIDGE  bridge name              (default: lxdbr0)
#   EDGEBENCH_LXD_SUBNET  bridge address/prefix    (default: 10.166.73.1/24; tests use 10.231.0.0/16)
#   LXD_LOG               daemon log when started by hand (default: /var/log/lxd/lxd.log)
set -eu

POOL=${EDGEBENCH_LXD_POOL:-default}
BRIDGE=${EDGEBENCH_LXD_BRIDGE:-lxdbr0}
SUBNET=${EDGEBENCH_LXD_SUBNET:-10.166.73.1/24}
LXD_LOG=${LXD_LOG:-/var/log/lxd/lxd.log}
export PATH="$PATH:/usr/sbin:/sbin"

log() { printf '[lxd-setup] %s\n' "$*"; }
answers() { lxc query /1.0 >/dev/null 2>&1; }

if [ "$(id -u)" != 0 ]; then
  echo "tools/lxd/setup.sh needs root (it installs packages and starts the LXD daemon)" >&2
  exit 1
fi

# 1. packages ---------------------------------------------------------------------------------
# dnsmasq-base is only a Recommends of lxd, but LXD's bridge needs it for DHCP.
missing=""
for p in lxd dnsmasq-base debootstrap; do
  dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
fi

# 2. daemon -----------------------------------------------------------------------------------
# LXD decides when it starts whether to confine containers with AppArmor. Started before
# apparmor_parser was installed (Docker's provisioning brings it) on a kernel with AppArmor on
# (Debian's), it later runs its unpacking under profiles it never loaded, and creating any container
# fails ("aa-exec: ERROR: profile 'lxd_archive-...' does not exist"): restart it once then.
pid=$(pidof lxd 2>/dev/null | cut -d' ' -f1)
if [ -n "$pid" ] && [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ] \
   && [ -f /var/lib/dpkg/info/apparmor.list ] && answers; then
  started=$(awk -v btime="$(awk '/^btime/ {print $2}' /proc/stat)" -v hz="$(getconf CLK_TCK)" \
            '{print int(btime + $22 / hz)}' "/proc/$pid/stat")
  if [ "$(stat -c %Y /var/lib/dpkg/info/apparmor.list)" -gt "$started" ]; then
    log "restarting LXD: apparmor was installed after it started"
    if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] && systemctl cat lxd.service >/dev/null 2>&1; then
      systemctl restart lxd.service
    else
      lxd shutdown --timeout 60 || kill "$pid"
    fi
  fi
fi
if ! answers; then
  if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] && systemctl cat lxd.service >/dev/null 2>&1; then
    log "starting lxd.service"
    systemctl start lxd.service
  else
    log "starting lxd by hand (no systemd as PID 1), log in $LXD_LOG"
    mkdir -p "$(dirname "$LXD_LOG")"
    getent group lxd >/dev/null || groupadd --system lxd
    # setsid + nohup: the daemon outlives this script and the shell that called it.
    setsid nohup lxd --group lxd --logfile "$LXD_LOG" >>"$LXD_LOG" 2>&1 </dev/null &
  fi
  lxd waitready --timeout 60 || { tail -n 30 "$LXD_LOG" >&2 || true; exit 1; }
  answers || { echo "LXD started but \`lxc query /1.0\` does not answer" >&2; exit 1; }
fi

# 3. storage pool, bridge, default profile ----------------------------------------------------
if [ -z "$(lxc storage list --format csv 2>/dev/null)" ]; then
  log "lxd init: dir pool '$POOL', bridge $BRIDGE ($SUBNET)"
  bridge_exists=$(lxc network show "$BRIDGE" >/dev/null 2>&1 && echo yes || echo no)
  {
    echo "storage_pools:"
    echo "- name: $POOL"
    echo "  driver: dir"
    if [ "$bridge_exists" = no ]; then
      echo "networks:"
      echo "- name: $BRIDGE"
      echo "  type: bridge"
      echo "  config:"
      echo "    ipv4.address: $SUBNET"
      echo "    ipv4.nat: \"true\""
      echo "    ipv6.address: none"
    fi
    echo "profiles:"
    echo "- name: default"
    echo "  devices:"
    echo "    root: {path: /, pool: $POOL, type: disk}"
    echo "    eth0: {name: eth0, network: $BRIDGE, type: nic}"
  } | lxd init --preseed
else
  pool=$(lxc storage list --format csv | head -n 1 | cut -d, -f1)
  if ! lxc network show "$BRIDGE" >/dev/null 2>&1; then
    log "creating bridge $BRIDGE ($SUBNET)"
    lxc network create "$BRIDGE" ipv4.address="$SUBNET" ipv4.nat=true ipv6.address=none
  fi
  if ! lxc profile device show default | grep -q '^root:'; then
    log "adding a root disk on pool '$pool' to the default profile"
    lxc profile device add default root disk path=/ pool="$pool"
  fi
  if ! lxc profile device show default | grep -q '^eth0:'; then
    log "adding eth0 on $BRIDGE to the default profile"
    lxc profile device add default eth0 nic network="$BRIDGE" name=eth0
  fi
fi

log "ready: LXD $(lxd --version), pools: $(lxc storage list --format csv | cut -d, -f1 | tr '\n' ' ')"
