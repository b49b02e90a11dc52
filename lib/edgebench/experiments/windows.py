"""Quick's load windows, stretched to what the device can do.

Quick's windows (1 s of wrk after 1 s of warm-up, wrk's 2 s timeout, 3 s per open-loop rate) are
sized for a machine like this project's. On a board that does the same fixed work N times slower
(`tools/probe -pace`, timed on the target itself: REFERENCE_PACE_NS here), every request takes
about N times longer, and a 1 s window with 16 connections can end before any is answered
(node-http's /compute on an emulated vCPU answered nothing). Under PROFILE=quick those windows
are multiplied by the slowdown, at least 1 and at most MAX_SCALE, the same for every runtime on
the device; smoke (a check of the machinery) and standard (30 s windows) keep theirs. A window the
user set (`duration_s=`, ...) is kept as set. The run notes the pace and the scale
(`window_scale` in meta.json), and each row's `duration_s` is the window asked for.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from edgebench.apps import place_probe
from edgebench.errors import ConfigError
from edgebench.targets import Target

# tools/probe -pace's best run on one core of this project's machine (x86-64, Debian 12).
REFERENCE_PACE_NS = 50_000_000
MAX_SCALE = 10.0
SCALED_PROFILES = ("quick",)


@dataclass(frozen=True)
class WindowScale:
    scale: float                 # what quick's windows are multiplied by (1: as they are)
    how: str                     # measured, given, or why the windows are kept
    pace_ns: int | None = None   # the device's time for the fixed work, when measured
    reference_ns: int = REFERENCE_PACE_NS

    def stretch(self, seconds: int) -> int:
        """`seconds` scaled to the nearest whole second (wrk takes no fractions), never below
        `seconds`; 0 stays 0."""
        return max(seconds, math.floor(seconds * self.scale + 0.5))


def device_pace(target: Target) -> int:
    """Nanoseconds the target takes for tools/probe's fixed CPU work (the best of three runs)."""
    r = target.run([place_probe(target), "-pace"], timeout=300, check=False)
    try:
        return int(json.loads(r.stdout.strip().splitlines()[-1])["pace_ns"])
    except (ValueError, IndexError, KeyError, TypeError):
        raise ConfigError(f"timing the device's pace on {target.name} failed (exit {r.exit_code}): "
                          f"{(r.stderr or r.stdout).strip()[-300:]}; give window_scale=1 to keep quick's "
                          "windows as they are") from None


def given_scale(given: str | float | None) -> float | None:
    """The scale a user gave, checked before anything starts; None for "auto"."""
    if given in (None, "", "auto"):
        return None
    try:
        scale = float(given)
    except (TypeError, ValueError):
        scale = float("nan")
    if not scale >= 1:
        raise ConfigError(f"window_scale={given!r}: 'auto' (quick follows the device's pace) or a number "
                          "of at least 1 (1 keeps the profile's windows)")
    return scale


def window_scale(target: Target, profile: str, given: str | float | None = "auto") -> WindowScale:
    """How much this run stretches its profile's windows on `target`: `given` "auto" measures
    the device under quick (and keeps other profiles' windows); a number >= 1 is used as it is."""
    scale = given_scale(given)
    if scale is not None:
        return WindowScale(scale, "given")
    if profile not in SCALED_PROFILES:
        return WindowScale(1.0, f"kept: {profile} keeps its windows")
    pace = device_pace(target)
    scale = min(MAX_SCALE, max(1.0, pace / REFERENCE_PACE_NS))
    capped = f", capped at {MAX_SCALE:g}" if pace / REFERENCE_PACE_NS > MAX_SCALE else ""
    return WindowScale(round(scale, 2), f"measured: the device's pace {pace / 1e6:.0f} ms against "
                       f"{REFERENCE_PACE_NS / 1e6:.0f} ms here{capped}", pace)
