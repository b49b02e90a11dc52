"""Is the IoMT program pathologically slow? Each workload's throughput natively, next to a
well-known tool doing the same work on the same input in the same run, alternating:
- AES: `openssl enc -aes-256-cbc` with the program's key and IV (outputs must be identical);
- LZW: `compress` (ncompress), if installed;
- k-means: Lloyd's algorithm in numpy, vectorised, from the same points, the same number of
  iterations.
The program's figure is its own work phase; the tool's is the whole command (its start is a few
ms against inputs of tens of MB). A ratio well below 1 is fine for a readable Go workload; what
this rules out is an order of magnitude.

    python benchmarks/iomt_throughput.py [--rounds 3] [--size 32MB] [--points 200K]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edgebench.apps import APPS, go_build
from edgebench.experiments.iomt import parse_size
from edgebench.targets import LocalTarget


def iomt(binary: Path, *args: str) -> dict:
    out = subprocess.run([str(binary), *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def timed(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kw)
    return time.perf_counter() - start


def sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def numpy_kmeans(points: np.ndarray, k: int, iterations: int, seed: int) -> float:
    """Lloyd's iterations; seconds for the iterations alone."""
    rng = np.random.default_rng(seed)
    centroids = points[rng.choice(len(points), k, replace=False)]
    start = time.perf_counter()
    for _ in range(iterations):
        d = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
        labels = d.argmin(axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, points)
        counts = np.bincount(labels, minlength=k)[:, None]
        centroids = np.where(counts > 0, sums / np.maximum(counts, 1), centroids)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="32MB", help="LZW and AES input (decimal units)")
    ap.add_argument("--points", default="200K", help="k-means points")
    args = ap.parse_args()
    binary = go_build(APPS["iomt"].source_dir, "iomt", LocalTarget().facts()["arch"])
    size_mb = parse_size(args.size) / 1e6
    rows = []
    with tempfile.TemporaryDirectory(prefix="eb-iomt-bench-") as tmp:
        tmp = Path(tmp)
        # AES against openssl, and the outputs must match byte for byte.
        data = tmp / "aes.in"
        gen = iomt(binary, "-workload", "aes", "-size", args.size, "-write-input", str(data))
        key, iv = gen["details"]["key_hex"], gen["details"]["iv_hex"]
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(iomt(binary, "-workload", "aes", "-input", str(data))["phases_ns"]["work"] / 1e9)
            theirs.append(timed(["openssl", "enc", "-aes-256-cbc", "-K", key, "-iv", iv, "-nosalt", "-in", str(data),
                                 "-out", str(tmp / "aes.out")]))
        same = sha256(tmp / "aes.out") == gen["checksum"]
        rows.append(("aes", f"{args.size}", size_mb / statistics.median(ours), size_mb / statistics.median(theirs),
                     "MB/s", "openssl enc -aes-256-cbc", "identical output" if same else "OUTPUT DIFFERS"))

        # LZW against compress (ncompress): the same algorithm, a different container format.
        data = tmp / "lzw.in"
        iomt(binary, "-workload", "lzw", "-size", args.size, "-entropy", "sensor", "-write-input", str(data))
        ours = [iomt(binary, "-workload", "lzw", "-input", str(data))["phases_ns"]["work"] / 1e9
                for _ in range(args.rounds)]
        if shutil.which("compress"):
            theirs = []
            for _ in range(args.rounds):
                with open(tmp / "lzw.Z", "wb") as out:
                    theirs.append(timed(["compress", "-c", str(data)], stdout=out))
            rows.append(("lzw", f"{args.size} sensor", size_mb / statistics.median(ours),
                         size_mb / statistics.median(theirs), "MB/s", "compress (ncompress)", ""))
        else:
            rows.append(("lzw", f"{args.size} sensor", size_mb / statistics.median(ours), float("nan"), "MB/s",
                         "compress", "not installed: apt-get install ncompress"))

        # k-means against numpy, same points and iteration count.
        data = tmp / "kmeans.in"
        gen = iomt(binary, "-workload", "kmeans", "-points", args.points, "-entropy", "sensor",
                   "-write-input", str(data))
        points = np.fromfile(data, dtype="<f8").reshape(-1, gen["dims"])
        iters = gen["details"]["iterations"]
        ours, theirs = [], []
        for _ in range(args.rounds):
            rec = iomt(binary, "-workload", "kmeans", "-input", str(data), "-iterations", str(iters))
            ours.append(rec["phases_ns"]["work"] / 1e9)
            theirs.append(numpy_kmeans(points, gen["k"], iters, 1))
        n = len(points) * iters
        rows.append(("kmeans", f"{args.points} x {iters} iterations", n / statistics.median(ours),
                     n / statistics.median(theirs), "point-iterations/s", "numpy Lloyd (vectorised)", ""))

    print(f"{'workload':8} {'input':24} {'iomt':>12} {'tool':>12} {'ratio':>6}  unit / tool")
    for w, label, mine, tool, unit, name, note in rows:
        ratio = mine / tool if tool == tool else float("nan")
        print(f"{w:8} {label:24} {mine:12.4g} {tool:12.4g} {ratio:6.2f}  {unit} / {name} {note}")
    bad = [r for r in rows if r[3] == r[3] and r[2] / r[3] < 0.1]
    if bad:
        print(f"pathologically slow (< 0.1 of the tool): {[r[0] for r in bad]}")
    return 1 if bad or any("DIFFERS" in r[6] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
