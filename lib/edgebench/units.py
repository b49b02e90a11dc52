"""Parsing parameters: resource limits and lists. A memory limit without a unit is refused:
"64" could mean bytes, MB or MiB, and the papers' tools disagree on which."""

from __future__ import annotations

import math
import re
from typing import Iterable

from edgebench.errors import ConfigError

# Docker and cgroups treat m/g as binary (MiB/GiB); so does edgebench. LXD's "MB" is decimal,
# which is why LXD limits are read back in bytes rather than trusted.
_MEMORY_UNITS = {
    "k": 1 / 1024, "kb": 1 / 1024, "kib": 1 / 1024,
    "m": 1, "mb": 1, "mib": 1,
    "g": 1024, "gb": 1024, "gib": 1024,
}
_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")


def parse_memory_mb(value: str | int | float | None) -> float | None:
    """'512m', '512MB', '2g' -> MiB. None or '' means unlimited. Bare numbers are refused."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "unlimited")):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ConfigError(
            f"memory={value!r} has no unit; write it as a string with one, e.g. memory='{value}m' "
            "(MiB) or '{0}g' (GiB)".format(value))
    m = _MEMORY_RE.match(str(value))
    if not m:
        hint = f"'{value}m'" if str(value).strip().isdigit() else "'512m' or '2g'"
        raise ConfigError(f"memory={value!r} is not a size with a unit; write e.g. {hint} "
                          "(m = MiB, g = GiB)")
    number, unit = float(m.group(1)), m.group(2).lower()
    if unit not in _MEMORY_UNITS:
        raise ConfigError(f"memory={value!r}: unknown unit {m.group(2)!r}; use m (MiB) or g (GiB)")
    mb = number * _MEMORY_UNITS[unit]
    if mb <= 0:
        raise ConfigError(f"memory={value!r} must be positive")
    return mb


def parse_cpus(value: str | int | float | None) -> float | None:
    """CPU count as a float (fractions allowed, like docker --cpus). None means unlimited."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "unlimited")):
        return None
    try:
        cpus = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"cpus={value!r} is not a number; write e.g. cpus=1 or cpus=0.5") from None
    if not math.isfinite(cpus) or cpus <= 0:
        raise ConfigError(f"cpus={value!r} must be a positive number, e.g. cpus=1 or cpus=0.5")
    return cpus


def format_memory(mb: float | None) -> str:
    """MiB -> the docker/cgroup spelling ('512m')."""
    if mb is None:
        return "unlimited"
    return f"{int(mb)}m" if float(mb).is_integer() else f"{int(mb * 1024)}k"


def as_list(value, everything: Iterable[str], word: str = "all") -> list[str]:
    """'a,b' or ['a', 'b'] or 'all'/'auto' -> list. Make passes strings; notebooks pass lists."""
    if value is None:
        return list(everything)
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    else:
        items = [str(v).strip() for v in value]
    if items in ([word], ["auto"], ["all"]):
        return list(everything)
    return items
