"""Fleet wall time: two devices measured in parallel against the same two one after the other.

Two SSH hosts in network namespaces on this machine (the test suite's sshhost), one notebook in
the quick profile on each: first `make figures TARGET=dev-a`, then `TARGET=dev-b`, then
`TARGET=dev-a,dev-b`. Prints the three wall times and parallel / sequential. Target: < 1.
The two "devices" share this machine's cores, so a CPU-bound notebook gains little here; on
real devices each has its own.

    python benchmarks/fleet_parallel.py [--only time_to_ready] [--runtimes native]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sshhost  # noqa: E402  (the test suite's namespace hosts: real sshd, real network stacks)


def ssh_config(hosts: dict, path: Path) -> Path:
    path.write_text("\n".join(
        f"Host {alias}\n    HostName {h.host}\n    User {h.user}\n    Port {h.port}\n    IdentityFile {h.key_file}\n"
        f"    IdentitiesOnly yes\n    UserKnownHostsFile {h.known_hosts}\n" for alias, h in hosts.items()))
    return path


def figures(targets: str, args, env: dict) -> float:
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "edgebench.drivers.figures", "--target", targets, "--profile", args.profile,
                        "--only", args.only, "--runtimes", args.runtimes, "--apps", args.apps, "--quiet"],
                       capture_output=True, text=True, env=env, timeout=3600)
    took = time.monotonic() - start
    if r.returncode != 0:
        sys.exit(f"make figures TARGET={targets} failed (exit {r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="time_to_ready")
    ap.add_argument("--runtimes", default="native")
    ap.add_argument("--apps", default="go-http")
    ap.add_argument("--profile", default="quick")
    args = ap.parse_args()
    reason = sshhost.unavailable_reason()
    if reason:
        sys.exit(f"cannot make namespace hosts here: {reason}")
    with tempfile.TemporaryDirectory(prefix="edgebench-fleet-") as tmp, ExitStack() as stack:
        tmp = Path(tmp)
        hosts = {a: stack.enter_context(sshhost.ssh_host(tmp / a)) for a in ("dev-a", "dev-b")}
        env = dict(os.environ, EDGEBENCH_SSH_CONFIG=str(ssh_config(hosts, tmp / "ssh_config")),
                   EDGEBENCH_DATA_DIR=str(tmp / "data"), EDGEBENCH_FIGURES_DIR=str(tmp / "figures"))
        figures("dev-a", args, env)  # warm-up: builds and uploads once, as a user's first run would
        one_a = figures("dev-a", args, env)
        one_b = figures("dev-b", args, env)
        both = figures("dev-a,dev-b", args, env)
    sequential = one_a + one_b
    print(f"notebook {args.only}, profile {args.profile}, runtimes {args.runtimes}, apps {args.apps}")
    print(f"dev-a alone          {one_a:7.1f} s")
    print(f"dev-b alone          {one_b:7.1f} s")
    print(f"one after the other  {sequential:7.1f} s")
    print(f"in parallel          {both:7.1f} s")
    print(f"parallel / sequential = {both / sequential:.2f} (target < 1)")
    return 0 if both < sequential else 1


if __name__ == "__main__":
    sys.exit(main())
