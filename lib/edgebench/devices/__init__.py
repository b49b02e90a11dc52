"""Emulated devices like the users': Debian 12 with systemd (cgroup v2 unified) booted under QEMU,
reached over SSH like any other target. `make device NAME=debian-v2` builds one (once, cached) and
boots it; then `TARGET=debian-v2` works in every goal; `make device-stop` stops them.

They exist so that every code path a user's device takes runs here: provisioning a fresh Debian over
SSH, cgroup v2 limits read back, Docker on systemd's cgroup driver, LXD on v2, apps cross-built for
aarch64, a memory controller switched off as on a stock Raspberry Pi OS. Under QEMU's software
emulation (TCG) their numbers measure the emulator, not a device: every row, meta.json and figure
from one says `emulated device`.

- `spec`: the devices (this module's `DEVICES`), each a `DeviceSpec`.
- `image`: the build (mmdebstrap from the Debian mirror, a key made for the device, its host key
  pinned), cached by recipe.
- `machine`: booting, the project's ssh configuration for the names, and stopping.
"""

from edgebench.devices.spec import DEVICES, DeviceSpec, device_spec, is_device

__all__ = ["DEVICES", "DeviceSpec", "device_spec", "is_device"]
