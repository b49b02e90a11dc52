"""I/O-bound HTTP load (paper 000, Figs. 4-8): `GET /io` (a small fixed response) under wrk, in the rich
scenario and the constrained memory sweep. Measured by edgebench.experiments.http_load, which
notebooks 03 and 04 share; this module names the endpoint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from edgebench.experiments.http_load import HttpLoad, plan, run


@dataclass(frozen=True)
class Params(HttpLoad):
    EXPERIMENT: ClassVar[str] = "io_bound"
    ENDPOINT: ClassVar[str] = "/io"
    TITLE: ClassVar[str] = "I/O-bound HTTP load"


__all__ = ["Params", "run", "plan"]
