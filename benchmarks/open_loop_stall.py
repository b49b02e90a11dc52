"""Is the open-loop latency the server's, not the tool's? Against the native go-http server:

1. A stall of known time and length (the server SIGSTOPped for --stall-ms, --stall-at s into the
   run): closed-loop wrk (the paper's way) and each open-loop tool at half the saturation
   throughput. Closed loop stops sending while the server is stopped, so its mean hardly moves;
   open loop keeps the schedule, so its p99 must hold most of the stall. Printed: both, and
   the ratio of open-loop p99 to the stall.
2. No stall, at half the saturation throughput: the open-loop p50 against a plain request's round
   trip (wrk, one connection, closed loop, so there is no queue). Bound: p50 <= 3 x the round
   trip + 1 ms, printed with the ratio.

    python benchmarks/open_loop_stall.py [--stall-ms 500] [--stall-at 2] [--duration 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from edgebench.apps import APPS, place_app
from edgebench.runtimes import Limits
from edgebench.runtimes.native import NativeRuntime
from edgebench.targets import LocalTarget
from edgebench.tools.load import LoadSettings, Wrk
from edgebench.tools.open_loop import OPEN_LOOP_GENERATORS, OpenLoopSettings


def stalled(pid: int, at_s: float, ms: int):
    def run():
        time.sleep(at_s)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(ms / 1000)
        os.kill(pid, signal.SIGCONT)
    t = threading.Thread(target=run)
    t.start()
    return t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stall-ms", type=int, default=500)
    ap.add_argument("--stall-at", type=float, default=2.0)
    ap.add_argument("--duration", type=int, default=5)
    args = ap.parse_args()
    target = LocalTarget()
    rt = NativeRuntime(target, f"bench-ol-{os.getpid()}")
    wrk = Wrk(target)
    tools = [cls(target, p) for cls in OPEN_LOOP_GENERATORS.values() if (p := cls.find(target))]
    try:
        instance, _ = rt.start(rt.package(place_app(target, APPS["go-http"])), Limits(), 18950)
        url = f"{instance.url}/io"
        closed = LoadSettings(threads=2, connections=16, duration_s=args.duration, warmup_s=0)
        saturation = wrk.run(url, closed).requests_per_second
        rate = round(saturation / 2)
        print(f"saturation (wrk -t2 -c16, {args.duration} s): {saturation:.0f} req/s; open loop at {rate} req/s")
        stall_ms = args.stall_ms

        print(f"\n1. server stopped for {stall_ms} ms at {args.stall_at} s")
        t = stalled(instance.pid, args.stall_at, stall_ms)
        r = wrk.run(url, closed)
        t.join()
        print(f"   wrk closed loop : mean {r.latency_us['mean'] / 1000:8.2f} ms   p99 {r.latency_us['p99'] / 1000:8.2f} ms"
              f"   (mean / stall = {r.latency_us['mean'] / 1000 / stall_ms:.3f})")
        settings = OpenLoopSettings((str(rate),), duration_s=args.duration, connections=16)
        ok = True
        for tool in tools:
            t = stalled(instance.pid, args.stall_at, stall_ms)
            o = tool.run_at_rate(url, rate, settings)
            t.join()
            ratio = o.latency_us["p99"] / 1000 / stall_ms
            ok &= ratio >= 0.5
            print(f"   {tool.name:9s} open loop: mean {o.latency_us['mean'] / 1000:8.2f} ms   p99 {o.latency_us['p99'] / 1000:8.2f} ms"
                  f"   (p99 / stall = {ratio:.3f}; served {o.requests_per_second:.0f} of {rate} req/s)")

        print("\n2. no stall: open-loop p50 at half saturation vs a plain request's round trip")
        plain = wrk.run(url, LoadSettings(threads=1, connections=1, duration_s=args.duration, warmup_s=0))
        rtt_ms = plain.latency_us["p50"] / 1000
        bound = 3 * rtt_ms + 1
        print(f"   plain round trip (wrk -c1, p50): {rtt_ms:.3f} ms; bound 3 x that + 1 ms = {bound:.3f} ms")
        for tool in tools:
            o = tool.run_at_rate(url, rate, settings)
            p50 = o.latency_us["p50"] / 1000
            ok &= p50 <= bound
            print(f"   {tool.name:9s} p50 {p50:.3f} ms = {p50 / rtt_ms:.2f} x the round trip"
                  f"   {'within' if p50 <= bound else 'OUTSIDE'} the bound")
        print(f"\n{'PASS' if ok else 'FAIL'}: open-loop p99 holds at least half of the stall, p50 within the bound"
              f" (tools: {', '.join(t.name for t in tools)})")
        return 0 if ok else 1
    finally:
        rt.cleanup()


if __name__ == "__main__":
    sys.exit(main())
