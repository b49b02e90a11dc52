"""An experiment's parameters as one frozen, typed record.

A notebook's parameters cell declares each parameter with its type and default; the experiment's
record (a subclass of `Parameters` in its module) declares the same names, types and defaults, and
a test holds the two together. The notebook builds the record in one call,
`Record.from_cell(globals())`; `make figures` builds it from the same values (the cell's defaults,
RUNTIMES=..., SET=...) before any notebook starts, so a wrong value is refused once, before
anything runs. Making a record checks every value and parses what has units, once: the measuring
function, `run(params)`, and the plan, `plan(params, runtimes)`, read the parsed forms (fields
declared with `parsed()`) and never parse text again.

Adding a parameter to an experiment: a field on its record, a line in its notebook's cell, and the
code that uses it.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, get_type_hints

from edgebench import resume
from edgebench.errors import ConfigError
from edgebench.experiments.common import check_profile
from edgebench.resume import Resumption
from edgebench.results import new_run_id
from edgebench.runtimes import requested_runtimes
from edgebench.targets import Target
from edgebench.units import parse_cpus, parse_memory_mb

# The types a parameters cell can declare (papermill passes literals of these).
CELL_TYPES = (str, int, float, bool)


def parsed(default: Any = None) -> Any:
    """A field the record computes from its parameters when made (never given)."""
    return field(init=False, repr=False, compare=False, default=default)


def library(default: Any = None) -> Any:
    """A parameter Python callers may give (tests, benchmarks) that notebooks do not declare."""
    return field(default=default, metadata={"cell": False})


@dataclass(frozen=True)
class Parameters:
    """What every experiment takes. Subclasses add theirs and check them in `check()`."""

    EXPERIMENT: ClassVar[str] = ""  # data/<EXPERIMENT>/ and figures/<EXPERIMENT>/
    # The smoke profile's one point per runtime: these replace a parameter left at its default (or
    # at "all", which make figures passes when APPS is not set).
    SMOKE: ClassVar[dict[str, Any]] = {"apps": "go-http", "protocols": "fair"}

    target: str = field(default="local", metadata={"also": Target})  # or a connected Target (Python callers)
    runtimes: str = "auto"
    profile: str = "standard"
    run_id: str = ""
    resume: str = ""  # "latest" or a run id: go on with that unfinished run (edgebench.resume)
    resume_anyway: bool = False  # resume although parameters, code or device differ (recorded)
    # make settle: measure only the points these (runtime, {column: "v1|v2"}) name, and let a
    # resumed run grow its repetitions for them (edgebench.drivers.settle).
    focus: tuple = library(())
    resumption: Resumption | None = parsed()

    def __post_init__(self):
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            kind = hints.get(f.name)
            value = getattr(self, f.name)
            if f.init and kind in CELL_TYPES and not isinstance(value, f.metadata.get("also", ())):
                if kind is float and isinstance(value, int) and not isinstance(value, bool):
                    object.__setattr__(self, f.name, float(value))
                elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                    raise ConfigError(f"{self.EXPERIMENT or type(self).__name__}: {f.name}={value!r} "
                                      f"is not {_article(kind)} {kind.__name__}; "
                                      f"give one (the default is {f.default!r})")
        check_profile(self.profile)
        if self.profile == "smoke":
            defaults = {f.name: f.default for f in dataclasses.fields(self) if f.init}
            for name, value in self.SMOKE.items():
                if name in defaults and getattr(self, name) in (defaults[name], "all"):
                    object.__setattr__(self, name, value)
        requested_runtimes(self.runtimes)  # an unknown name is refused here, before connecting
        self.check()
        if self.resume:
            if self.run_id:
                raise ConfigError(f"run_id={self.run_id!r} replots a run and resume={self.resume!r} continues one; "
                                  "give only one of them")
            target = self.target if isinstance(self.target, str) else self.target.name
            self.set(resumption=resume.resolve(self.EXPERIMENT, self.resume, target, resume.plain_given(self.given()),
                                               type(self).__module__, self.resume_anyway,
                                               more_repetitions=bool(self.focus)))

    def measuring_run_id(self) -> str:
        """The run a measurement writes: the one it resumes, the run_id a Python caller chose, or a new one."""
        if self.resumption is not None:
            return self.resumption.run_id
        return self.run_id or new_run_id()

    def check(self) -> None:
        """Check the values and set the parsed fields (with `self.set`); a ConfigError names what to change."""

    def set(self, **values) -> None:
        """Set parsed fields: the record is frozen once `check` returns."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    # -- making one -----------------------------------------------------------------------------

    @classmethod
    def cell_fields(cls) -> dict[str, dataclasses.Field]:
        """The parameters a notebook's cell declares, in order."""
        return {f.name: f for f in dataclasses.fields(cls) if f.init and f.metadata.get("cell", True)}

    @classmethod
    def cell_types(cls) -> dict[str, type]:
        hints = _hints(cls)
        return {name: hints[name] for name in cls.cell_fields()}

    @classmethod
    def from_cell(cls, namespace: Mapping[str, Any]):
        """The record of a notebook's parameters cell: pass it `globals()`. Every parameter the
        record declares must be there (a cell that lost one is an error, not a silent default)."""
        missing = [name for name in cls.cell_fields() if name not in namespace]
        if missing:
            raise ConfigError(f"the parameters cell does not set {', '.join(missing)}; "
                              f"{cls.__name__} takes them (restore the cell from the repository)")
        return cls(**{name: namespace[name] for name in cls.cell_fields()})

    @classmethod
    def from_values(cls, values: Mapping[str, Any]):
        """A record from some of its parameters (the others keep their defaults); a name it does
        not take is an error."""
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"{cls.EXPERIMENT or cls.__name__} takes no parameter {', '.join(unknown)}; "
                              f"it takes {', '.join(sorted(known))}")
        return cls(**values)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def given(self) -> dict[str, Any]:
        """The cell's parameters with their values: what `from_cell` reads back."""
        return {name: getattr(self, name) for name in self.cell_fields()}

    def recorded(self) -> dict[str, Any]:
        """What a run's meta.json keeps as its parameters: every one given (the cell's and the
        library's, a connected Target by its name) and every parsed form the run measured with
        (`reps`, the limits in CPUs and MiB, the load settings ...), one source for both."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "resumption"}
        return {name: _plain(value) for name, value in values.items()}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


@dataclass(frozen=True)
class Limited(Parameters):
    """A record whose cell has `cpus` and `memory` (text such as "1" and "512m"; "" for no
    limit): `limits()` in its `check()` parses them once into `cpus_limit` and `memory_limit_mb`,
    which the run clips to the target (common.resolve_limits)."""

    cpus_limit: float | None = parsed()
    memory_limit_mb: float | None = parsed()

    def limits(self) -> None:
        self.set(cpus_limit=parse_cpus(getattr(self, "cpus", "")),
                 memory_limit_mb=parse_memory_mb(getattr(self, "memory", "")))


def _plain(value: Any) -> Any:
    """A value as JSON keeps it: records as dicts, a connected Target by its name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.as_dict() if hasattr(value, "as_dict") else dataclasses.asdict(value)
    if isinstance(value, Target):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _article(kind: type) -> str:
    return "an" if kind.__name__[0] in "aeiou" else "a"


__all__ = ["Parameters", "Limited", "parsed", "library", "CELL_TYPES"]
