"""Building every artifact an experiment needs before any clock starts: each app placed on the
target once, then packaged for every runtime that runs it; a failure kept with its reason, for the
rows of the points that needed it."""

from __future__ import annotations

from edgebench.apps import APPS, App, place_app
from edgebench.errors import EdgebenchError
from edgebench.results import Run
from edgebench.targets import Target


class Artifacts(dict):
    """(app, runtime) -> Artifact, and `failures`: (app, runtime) -> why it could not be packaged."""

    def __init__(self):
        super().__init__()
        self.failures: dict[tuple[str, str], str] = {}


def package_all(run: Run, target: Target, runtimes, apps, docker_build: str, prepare=None) -> Artifacts:
    """Build every artifact before any clock starts; a failure is kept under raw/ and its reason
    in `failures`. `apps`: names from the registry, or App records (one per NPB binary).
    `prepare(built)`: what goes with the app into every runtime (its input files), before packaging."""
    artifacts = Artifacts()
    for app in apps:
        record = app if isinstance(app, App) else APPS[app]
        app = record.name
        try:
            built = place_app(target, record)
            if prepare:
                prepare(built)
        except EdgebenchError as e:
            run.save_raw(f"build-{app}", command="place_app", stderr=str(e))
            artifacts.failures.update({(app, rt.name): str(e) for rt in runtimes})
            continue
        for rt in runtimes:
            if not rt.runs(record):  # left out of the sweep (experiments.sweep), not a failure
                continue
            try:
                artifacts[(app, rt.name)] = rt.package(built, rt.build_for(docker_build))
            except EdgebenchError as e:
                run.save_raw(f"package-{app}-{rt.name}", command="package", stderr=str(e))
                artifacts.failures[(app, rt.name)] = str(e)
    return artifacts


def batch_failure(result) -> str:
    """Why a batch run failed, for its failed row: OOM kill, timeout or exit code, and the last
    lines it wrote to stderr."""
    why = ("OOM-killed" if result.oom_killed else
           "timed out" if result.timed_out else f"exit code {result.exit_code}")
    tail = " | ".join(result.stderr.strip().splitlines()[-2:])
    return f"{why}: {tail}".strip(": ")
