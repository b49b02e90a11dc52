"""Page faults of the IoMT workloads (paper 001/004, Table 5): LZW and AES from 100 KB up, Docker
against native, counted in-process, in the run's cgroup and by perf. The batches are iomt's
(edgebench.experiments.iomt measures both); this module holds Table 5's sizes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from edgebench.experiments.iomt import IomtBatch, plan, run

# Table 5 counts faults for LZW and AES from 100 KB up.
SIZES = {
    "standard": {"lzw": "100KB,1MB,10MB,100MB", "aes": "100KB,1MB,10MB,100MB"},
    "quick": {"lzw": "100KB,4MB", "aes": "100KB,4MB"},
    "smoke": {"lzw": "100KB", "aes": "100KB"},
}


@dataclass(frozen=True)
class Params(IomtBatch):
    """The parameters of notebook 06."""
    EXPERIMENT: ClassVar[str] = "page_faults"
    SIZE_TABLE: ClassVar[dict] = SIZES

    workloads: str = "lzw,aes"  # Table 5 covers LZW and AES


__all__ = ["Params", "SIZES", "run", "plan"]
