"""Static footprint (paper 000, Fig. 2): the size of each app and of each runtime's artifact.

Metrics per (app, runtime, build):
- `app_size`: the app's own code (Go: the static binary; Node: the script bundle).
- `image_size`: what the runtime needs on the device to run it. Native Go: the binary. Native
  Node: the script plus the `node` binary (what the paper's pkg-built binary bundles). Docker:
  the image size as `docker image inspect` reports it. LXD: the root filesystem plus the app.
  Nanos: the disk image ops built (kernel, boot loader, filesystem with the app), as the blocks
  it occupies; `image_size_apparent` is its length (it is sparse) and `kernel_size` the Nanos
  kernel inside it (the paper: "around 3 MB").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from edgebench.experiments import estimate
from edgebench.apps import APPS, HTTP_APPS, place_app
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.experiments.common import as_list, check_apps, opening
from edgebench.experiments.parameters import Parameters, library, parsed
from edgebench.runtimes import RUNTIMES

EXPERIMENT = "static_footprint"
EXTRA_COLUMNS = ["build", "artifact"]


@dataclass(frozen=True)
class Params(Parameters):
    EXPERIMENT: ClassVar[str] = EXPERIMENT

    apps: str = "all"
    docker_builds: str = "offline"
    require_kvm: bool = False
    nanos_accel: str | None = library()
    app_names: list[str] = parsed()
    builds: list[str] = parsed()

    def check(self):
        modes = list(dict.fromkeys(m for cls in RUNTIMES.values() for m in cls.build_modes if m != "native"))
        builds = as_list(self.docker_builds, ["offline"])
        for b in builds:
            if b not in modes:
                raise ConfigError(f"build {b!r} unknown; choose from {', '.join(modes)}")
        self.set(app_names=check_apps(self.apps, HTTP_APPS), builds=builds)


def run(p: Params) -> Path:
    """Measure, write data/static_footprint/<run_id>/, return that directory."""
    with opening(p, p.app_names, EXTRA_COLUMNS, check_limits=False) as o:
        run, left_out = o.run, {}
        for app_name in p.app_names:
            base = dict(app=app_name, rep=1, cpus=None, memory_mb=None)
            try:
                built = place_app(o.target, APPS[app_name])
            except EdgebenchError as e:
                for rt in o.runtimes:
                    run.failed(metric="image_size", unit="bytes", error=f"building {app_name}: {e}",
                               runtime=rt.name, protocol="fair", **base)
                continue
            for rt in o.runtimes:
                if not rt.runs(APPS[app_name]):  # a pair that cannot run is left out, not failed
                    left_out[f"{app_name} on {rt.name}"] = f"{rt.name} runs {rt.runs_what()}"
                    continue
                for build in dict.fromkeys(rt.build_for(b) for b in p.builds):
                    row = dict(base, runtime=rt.name, build=build,
                               protocol="published" if build == "published" else "fair")
                    try:
                        artifact = rt.package(built, build)
                    except EdgebenchError as e:
                        run.failed(metric="image_size", unit="bytes", error=str(e), **row)
                        continue
                    run.save_raw(f"package-{app_name}-{rt.name}-{build}",
                                 command=artifact.details.get("build_command", "(copied)"),
                                 stdout=str(artifact.details), artifact=artifact.ref)
                    row["build"] = artifact.build
                    run.add(metric="app_size", value=artifact.raw_size_bytes, unit="bytes",
                            artifact=artifact.ref, **row)
                    run.add(metric="image_size", value=artifact.size_bytes, unit="bytes",
                            artifact=artifact.ref, **row)
                    for metric, value, unit, what in artifact.extra_sizes:
                        run.add(metric=metric, value=value, unit=unit, artifact=what, **row)
        if left_out:
            run.note("left_out", left_out)
        return run.dir


def plan(p: Params, runtimes: list[str]) -> estimate.Work:
    """One package (and size reading) per (app, runtime, build)."""
    apps, builds = p.app_names, p.builds
    return estimate.Work(points=estimate.pairs(runtimes, apps) * len(builds),
                         seconds=estimate.model_seconds(runtimes, len(apps) * len(builds), 0, 0, apps), apps=apps,
                         levels=f"builds {','.join(builds)}", repetitions=1)
