"""`make device NAME=...` and `make device-stop [NAME=...]`:

    python -m edgebench.devices start debian-v2     # build once (cached), boot, wait for SSH
    python -m edgebench.devices stop [debian-v2]    # power off one, or every running device
    python -m edgebench.devices list                # the devices, built or not, running or not
"""

from __future__ import annotations

import argparse
import signal
import sys

from edgebench.devices import image, machine
from edgebench.devices.spec import DEVICES, device_spec
from edgebench.errors import EdgebenchError


def log(message: str) -> None:
    print(f"[device] {message}", file=sys.stderr, flush=True)


def start(name: str, rebuild: bool) -> None:
    spec = device_spec(name)
    cached = None if rebuild else image.built(spec)
    if cached:
        log(f"image cached: built {cached['built_at']} in {cached['build_seconds']:.0f} s "
            f"(recipe {cached['recipe_digest']})")
    image.build(spec, log, rebuild=rebuild)
    machine.start(spec, log)


def listing() -> str:
    rows = []
    for spec in DEVICES.values():
        record, state = image.built(spec), machine.running(spec)
        status = (f"running at {state['address']} ({state['accel']})" if state else
                  "built, stopped" if record else "not built")
        rows.append(f"  {spec.name:<17} {status:<32} {spec.what}")
    return "\n".join(["devices (make device NAME=...; then TARGET=NAME):", *rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="build (once) and boot a device")
    s.add_argument("name", nargs="?", default="", help=", ".join(DEVICES))
    s.add_argument("--rebuild", action="store_true", help="build the image anew even when it is cached")
    t = sub.add_parser("stop", help="stop a device, or every running one")
    t.add_argument("name", nargs="?", default="")
    sub.add_parser("list", help="the devices and their state")
    args = ap.parse_args(argv)
    # `kill` and make's own SIGTERM unwind like Ctrl-C: a booting device is stopped, not left running.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if args.command == "list":
            print(listing())
        elif args.command == "start":
            if not args.name:
                print(f"name a device: make device NAME=<{'|'.join(DEVICES)}>\n\n{listing()}", file=sys.stderr)
                return 2
            start(args.name, args.rebuild)
        elif args.name:
            if not machine.stop(device_spec(args.name), log):
                log(f"{args.name} was not running")
        else:
            stopped = machine.stop_all(log)
            log(f"stopped {', '.join(stopped)}" if stopped else "no device was running")
    except EdgebenchError as e:
        print(f"edgebench device: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("edgebench device: interrupted; nothing it started is left running", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
