"""The five publications edgebench reproduces: their titles, where to read them, and which
experiments measure what they measured (from each experiment's reference files, paperNNN_*)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    number: str     # "000": data/reference/paper000_*.csv
    title: str
    source: str     # authors or publisher, as the copy names them
    link: str = ""  # where a reader finds it ("" where the copy gives none)


PAPERS = {p.number: p for p in (
    Paper("000", "Unikernels vs. Containers: A Runtime-Level Performance Comparison for Resource-Constrained "
          "Edge Workloads", "H. Dinh-Tuan, TU Berlin"),
    Paper("001", "Performance Characterization of Containers in Edge Computing (short version)",
          "R. Gupta, K. Nahrstedt, UIUC, 2025", "https://arxiv.org/abs/2505.02082v1"),
    Paper("002", "Unikraft: Performance (the project's page of EuroSys'21 results)", "the Unikraft project",
          "https://unikraft.org"),
    Paper("003", "Container overhead on a Raspberry Pi 2: IOZone, NPB, STREAM and ApacheBench with the "
          "Energy-Delay Product (the copy carries no title)", "authors not named in the copy"),
    Paper("004", "Performance Characterization of Containers in Edge Computing (long version)",
          "R. Gupta, K. Nahrstedt, UIUC, 2025", "https://arxiv.org/abs/2505.02082v2"),
)}


def papers_of(references: tuple[str, ...]) -> list[Paper]:
    """The papers behind an experiment's reference files ('paper001_table4_....csv' -> 001);
    001's tables are also the long version's (004)."""
    numbers = list(dict.fromkeys(name[5:8] for name in references if name.startswith("paper")))
    if "001" in numbers:
        numbers.append("004")
    return [PAPERS[n] for n in numbers if n in PAPERS]
