"""`make figures` / `make replot`: run every experiment notebook headless through papermill,
then print a short summary of what each produced.

    python -m edgebench.drivers.figures [--replot] [--profile quick] [--target pi@raspberrypi] ...
    python -m edgebench.drivers.figures --only io_bound --set memory_levels=48m,32m --set protocols=fair

`--set name=value` (`make figures SET='name=value ...'`) sets any parameter of the notebooks'
`parameters` cells, as editing the cell would, in each selected notebook that declares it.

A notebook is written to figures/<experiment>/ only once it has run to the end; a failed one
is kept as <name>.failed.ipynb for reading, never as a product.

`--resume latest` (`make figures RESUME=latest`) goes on with the notebooks of a run that was
stopped: a notebook whose latest run completed with these settings is skipped (with
`--resume_anyway yes`, also one whose experiment's code changed since), an unfinished one is
continued without measuring again the points it measured (edgebench.resume), one with no run yet
is measured from the start.

SIGINT, SIGTERM or SIGHUP (Ctrl-C, `kill`, `timeout`, a job runner, a closed terminal) stop the
run cleanly: the signal is passed to the notebook kernel as an interrupt, the experiment stops
what it started and marks its run interrupted with every row kept, no further cell or notebook
runs, and the driver exits 128 + the signal's number. (GNU make passes SIGTERM on to the driver
but only waits on SIGINT/SIGHUP sent to make alone: send those to the process group, as a
terminal does, or to this process.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from edgebench.drivers import fleet, plan
from edgebench.drivers.lab import KERNEL_NAME, ensure_kernel
from edgebench.errors import ConfigError, EdgebenchError, TargetUnreachable
from edgebench.experiments import EXPERIMENTS, NOTEBOOKS_DIR, experiment_of, for_notebook
from edgebench.paths import FIGURES_DIR, PROJECT_ROOT
from edgebench.provisioning import provision
from edgebench.results import (NOT_MEASURABLE, STATUSES, close_unfinished, find_run, load_meta, load_results,
                               seconds_since, sitting_started, time_in_points, utc_now)
from edgebench.runtimes import leftovers_on, removal_command
from edgebench.runtimes.tags import run_tag_prefix
from edgebench.signals import Stopper
from edgebench.targets import connect

# What `make figures` can set; each notebook gets only those its parameters cell declares.
PASSED_THROUGH = ("target", "runtimes", "apps", "profile", "repetitions", "load_generator", "resume",
                  "resume_anyway")


def _short(path: Path) -> str:
    try:
        return str(path.relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def declared_parameters(nb: Path) -> set[str]:
    """The names in the notebook's `parameters` cell (its experiment's record holds the same)."""
    return set(for_notebook(nb).parameters.cell_fields())


def parameters_for(nb: Path, params: dict, settings: dict[str, str] | None = None) -> dict:
    """Only what the notebook declares (papermill would inject the rest as stray variables), after
    checking, before anything runs, that its experiment's record takes them: `settings` (`--set`)
    are converted to the type the record declares, and the record is made (every value checked,
    units parsed) so a wrong value stops `make figures` before the first notebook."""
    record = for_notebook(nb)
    record.check_apps(params.get("apps"))
    types = record.parameters.cell_types()
    passed = {k: v for k, v in params.items() if k in types}
    for name, text in (settings or {}).items():
        if name in types:
            passed[name] = typed_setting(nb, name, text, types[name].__name__)
    made = record.params(passed)
    if made.resume:  # the run it goes on with, by id, so the kernel resolves the same one
        passed["resume"] = made.resumption.run_id if made.resumption else ""
        if made.resumption is None:
            passed.pop("resume_anyway", None)
    return passed


def already_completed(nb: Path, passed: dict) -> Path | None:
    """The run a resumed notebook completed (nothing left to measure), else None."""
    if not passed.get("resume"):
        return None
    made = for_notebook(nb).params(passed)
    return made.resumption.run_dir if made.resumption and made.resumption.completed else None


# `--set` values as the parameters cell's defaults are typed; anything else stays a string.
_BOOLS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def typed_setting(nb: Path, name: str, text: str, type_name: str):
    try:
        if type_name == "int":
            return int(text)
        if type_name == "float":
            return float(text)
        if type_name == "bool":
            return _BOOLS[text.lower()]
    except (ValueError, KeyError):
        raise ConfigError(f"SET {name}={text}: {nb.name} declares {name} as {type_name}; "
                          f"give {'true or false' if type_name == 'bool' else f'a number ({type_name})'}") from None
    return text


def parse_settings(items: list[str] | None, todo: list[Path]) -> dict[str, str]:
    """`--set name=value` items, each checked before anything runs: a name some selected notebook
    declares, and not one make figures has its own setting for."""
    settings = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise ConfigError(f"SET {item!r}: write name=value (for example memory_levels=48m,32m)")
        if name == "run_id":
            raise ConfigError("SET run_id: make replot re-renders the latest run")
        if name in ("resume", "resume_anyway"):
            raise ConfigError(f"SET {name}: use {name.upper()}= (make figures RESUME=latest RESUME_ANYWAY=yes)")
        if name in PASSED_THROUGH:
            option = "REPS" if name == "repetitions" else name.upper()
            raise ConfigError(f"SET {name}: make figures sets {name} itself; use {option}= (--{name})")
        if not any(name in declared_parameters(nb) for nb in todo):
            known = sorted(set().union(*(declared_parameters(nb) for nb in todo)) - set(PASSED_THROUGH) - {"run_id"})
            raise ConfigError(f"SET {name}: no selected notebook has a parameter {name}; "
                              f"theirs are: {', '.join(known)}")
        settings[name] = value
    return settings


def notebooks(only: str | None = None) -> list[Path]:
    """Every experiment notebook (those with a record: 00_verdicts and compare measure nothing),
    or those whose name contains one of `only`'s comma-separated parts."""
    found = sorted(e.notebook_path for e in EXPERIMENTS.values())
    parts = [p.strip() for p in (only or "").split(",") if p.strip()]
    return [nb for nb in found if not parts or any(p in nb.stem for p in parts)]


def ipc_kernel_manager():
    """A kernel manager whose kernel talks over Unix sockets in Jupyter's private runtime folder,
    not over TCP on loopback: nothing else on the machine can reach it, and the kernel has no
    reason to print "Kernel is running over TCP without encryption" into every notebook."""
    import uuid

    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from traitlets import CaselessStrEnum

    class IpcKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        def _ip_default(self) -> str:
            # jupyter_client names the sockets "kernel-ipc-<n>" in the current folder when it has no
            # connection file yet: two drivers of a fleet share notebooks/ and their kernels then
            # read each other's messages ("Invalid Signature"). One unique prefix per kernel.
            runtime = Path(jupyter_runtime_dir())
            runtime.mkdir(parents=True, exist_ok=True)
            return str(runtime / f"edgebench-{uuid.uuid4().hex[:12]}-ipc")

    return IpcKernelManager


def run_notebook(nb: Path, parameters: dict, log_output: bool = True, stopper: Stopper | None = None) -> Path:
    import papermill as pm

    out_dir = FIGURES_DIR / experiment_of(nb)
    out_dir.mkdir(parents=True, exist_ok=True)
    final, partial = out_dir / nb.name, out_dir / f"{nb.stem}.partial.ipynb"
    failed = out_dir / f"{nb.stem}.failed.ipynb"
    ensure_kernel()  # the kernel the notebooks name: this venv's interpreter
    try:
        hooks = {"on_cell_start": stopper.before_cell} if stopper else {}
        pm.execute_notebook(str(nb), str(partial), parameters=parameters, kernel_name=KERNEL_NAME,
                            cwd=str(NOTEBOOKS_DIR), log_output=log_output, progress_bar=False,
                            kernel_manager_class=ipc_kernel_manager(), **hooks)
    except BaseException:
        if partial.exists():
            partial.replace(failed)
        raise
    partial.replace(final)
    failed.unlink(missing_ok=True)
    return final


def host_stopped_answering(e: BaseException) -> bool:
    """A notebook ended by a target or load generator that stopped answering (TargetUnreachable in
    its cell: papermill gives the cell's error by name), not by a fault of its own."""
    return getattr(e, "ename", None) == TargetUnreachable.__name__


def run_headless(goal: str, nb: Path, parameters: dict, quiet: bool = False) -> int:
    """A notebook that measures nothing (make compare, make verdicts) run headless into
    figures/<name>/: the exit code, and a line saying where it went or why it failed (the failed
    notebook is kept beside it); Ctrl-C stops its kernel and ends with the signal's code."""
    stopper = Stopper().install()
    try:
        out = run_notebook(nb, parameters, log_output=not quiet, stopper=stopper)
    except Exception as e:  # papermill's error carries the cell's; the failed notebook is kept
        last = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        print(f"make {goal}: FAILED: {last} (see {FIGURES_DIR / experiment_of(nb)}/{nb.stem}.failed.ipynb)",
              file=sys.stderr)
        return stopper.exit_code if stopper.stopped else 1
    finally:
        stopper.done()
    print(f"make {goal}: {out}, with what it wrote, in {out.parent}/", file=sys.stderr)
    return 0


def summary(experiments: list[str], since: dict[str, str] | None = None, target: str | None = None,
            harness: dict[str, float] | None = None) -> str:
    """One line per experiment: its newest run's row counts (on `target`, if given) and, from
    `harness`, the share of its notebook's time spent outside measured points. With `since`
    (experiment -> the time its notebook started), only a run that notebook made counts, never an
    older one."""
    harness, skipped = harness or {}, {}
    lines = [f"{'experiment':<20} {'ok':>5} {'failed':>6} {'n/m':>5} {'harness':>7}  data / figures"]
    for exp in experiments:
        try:
            run_dir = find_run(exp, "latest", target=target)
            if since and sitting_started(load_meta(run_dir)) < since.get(exp, ""):
                raise LookupError("older than this invocation")
        except Exception:
            lines.append(f"{exp:<20} {'-':>5} {'-':>6} {'-':>5} {'-':>7}  no data{' from this run' if since else ''}")
            continue
        df = load_results(run_dir)
        meta = load_meta(run_dir)
        ok, failed, unmeasurable = ((df["status"] == s).sum() for s in STATUSES)
        share = f"{harness[exp]:.0%}" if exp in harness else "-"
        lines.append(f"{exp:<20} {ok:>5} {failed:>6} {unmeasurable:>5} {share:>7}  {_short(run_dir)}  "
                     f"{_short(FIGURES_DIR / exp)}/")
        for rt, why in ((meta.get("notes") or {}).get("skipped_runtimes") or {}).items():
            skipped.setdefault((rt, why), []).append(exp)
        for why, n in df[df["status"] == NOT_MEASURABLE]["error"].str[:110].value_counts().head(3).items():
            lines.append(f"{'':<20} {n} not measurable here: {why}")
        if meta.get("status") != "completed":
            lines.append(f"{'':<20} run status: {meta.get('status')} {meta.get('error') or ''}")
    # Said once, not under every notebook: a runtime this device lacks is absent from each.
    for (rt, why), exps in skipped.items():
        where = "every notebook" if len(exps) == len(experiments) > 1 else ", ".join(exps)
        lines.append(f"{rt} not measured in {where}: {why}")
    lines.append("(n/m: rows this device or runtime cannot measure, such as energy without a power meter; "
                 "not failures. harness: the share of the notebook's time outside its measured points)")
    return "\n".join(lines)


def measured_points(experiment: str, since: str, target: str) -> tuple[int, float]:
    """Points the notebook that started at `since` measured, and their seconds (results.time_in_points)."""
    try:
        run_dir = find_run(experiment, "latest", target=target)
    except ConfigError:
        return 0, 0.0
    return time_in_points(run_dir, since) if sitting_started(load_meta(run_dir)) >= since else (0, 0.0)


def planned(todo: list[Path], per_notebook: dict[Path, dict], params: dict,
            plan_only: bool = False) -> dict[Path, "plan.NotebookPlan"]:
    """Print what will run and for about how long (edgebench.drivers.plan); an estimate that cannot be
    made is said and the run goes on without one. `make plan` installs nothing, so on a device not
    yet provisioned it plans fewer runtimes than `make figures` will: said below the left-out ones."""
    target = params.get("target") or "local"
    try:
        with connect(target) as t:
            found, facts = plan.runtime_availability(t), t.facts()
            try:
                left = leftovers_on(t, run_tag_prefix())
            except EdgebenchError as e:  # a courtesy too: the plan stands without it
                left = []
                print(f"== {target}: could not look for what earlier runs left there ({e})", file=sys.stderr)
        available = plan.available_runtimes(t, found)
        plans = {nb: plan.make_plan(nb, per_notebook[nb], available, facts=facts) for nb in todo}
        for nb, p in plans.items():  # a resumed run measures only the points it has not
            if per_notebook[nb].get("resume"):
                p.measured_before = plan.resumed_points(p.experiment, per_notebook[nb]["resume"])
    except Exception as e:  # an estimate is a courtesy; the run itself reports real errors
        print(f"== plan: no estimate ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
        return {}
    named = {r.strip() for r in (params.get("runtimes") or "auto").split(",")}
    skipped = plan.left_out(found) if named & {"auto", "all"} else ""
    if skipped and plan_only:
        skipped += (f"\n(`make plan` installs nothing: `make figures` provisions {target} first, installing what "
                    f"it can of these, and plans again; `make provision TARGET={target}` does that step alone)")
    print(f"== plan for {target}, profile {params.get('profile') or 'standard'}:\n{plan.table(list(plans.values()))}"
          + (f"\n{skipped}" if skipped else ""), file=sys.stderr, flush=True)
    if left:
        print(leftovers_warning(target, left), file=sys.stderr, flush=True)
    return plans


def leftovers_warning(target: str, left: list[str], shown: int = 12) -> str:
    """What earlier runs left on the target: the run measures beside it, so the user decides."""
    lines = [f"  {item}: {removal_command(item)}" for item in left[:shown]]
    more = [f"  ... and {len(left) - shown} more"] if len(left) > shown else []
    return "\n".join([f"== {target} still has what an earlier edgebench run left there (one that could not "
                      "remove it: a host that stopped answering, a killed make), or what another run uses now; "
                      "what of it runs takes memory, and CPU when busy, from this run's measurements. If no "
                      f"other run uses {target}, remove it there:", *lines, *more])


def provision_first(target: str, for_tests: bool = False, runtimes: str | None = None,
                    load_generator: str | None = "local", profile: str | None = None) -> None:
    """What `make figures` does before measuring: install and start what is missing on the
    target, saying only what changed; a target that cannot be provisioned goes on with what it has.
    Runtimes named one by one (RUNTIMES=native,docker) are the only ones set up, with every tool;
    'auto' or 'all' sets up every runtime. A load generator on another host (this machine, for a
    remote target) gets the tools it runs: a fresh laptop driving a Pi had no wrk or registry.
    `load_generator=None`: it is provisioned already (a fleet does each once)."""
    names = [r.strip() for r in (runtimes or "").split(",") if r.strip()]
    only = [] if not names or {"auto", "all"} & set(names) else ["--runtimes", ",".join(names), "--with-tools"]
    code = provision.main(["--target", target, "--before-run", *(["--for-tests"] if for_tests else []), *only,
                           *(["--profile", profile] if profile else [])])
    if code == 1:
        raise ConfigError(f"provisioning {target} failed (see above)")
    host = fleet.load_generator_host(target, load_generator) if load_generator is not None else None
    if host is not None:
        print(f"[provision] {host}, the load generator for {target}:", file=sys.stderr, flush=True)
        if provision.main(["--target", host, "--before-run", "--load-generator"]) == 1:
            raise ConfigError(f"provisioning the load generator {host} failed (see above)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replot", action="store_true", help="re-render from the latest data, measure nothing")
    ap.add_argument("--only", help="run only notebooks whose name contains this (comma-separated: any of these)")
    ap.add_argument("--quiet", action="store_true", help="do not stream notebook output")
    ap.add_argument("--provision", action="store_true", help="provision the target(s) first, as `make figures` does")
    ap.add_argument("--fleet", help="a fleet file (YAML) naming several devices; see edgebench.drivers.fleet")
    ap.add_argument("--plan-only", action="store_true", help="print the run plan and its estimate, measure nothing")
    ap.add_argument("--load-generator-ready", action="store_true",
                    help="with --provision: the load generator is provisioned already (a fleet does it once)")
    ap.add_argument("--set", action="append", metavar="NAME=VALUE",
                    help="set a parameter of every selected notebook that declares it (repeatable)")
    for name in PASSED_THROUGH:
        ap.add_argument(f"--{name}", default=None)
    args = ap.parse_args(argv)
    try:
        devices = fleet.load_fleet(args.fleet) if args.fleet else fleet.parse_targets(args.target or "local")
    except ConfigError as e:
        print(f"make figures: {e}", file=sys.stderr)
        return 2
    if args.fleet or len(devices) > 1:
        if args.replot:
            print("make figures: --replot re-renders one device's latest data; leave TARGET/FLEET out",
                  file=sys.stderr)
            return 2
        return fleet.run_fleet(devices, args, passed=PASSED_THROUGH)
    if args.provision and not args.replot:
        try:
            provision_first(args.target or "local", runtimes=args.runtimes, profile=args.profile,
                            load_generator=None if args.load_generator_ready else args.load_generator or "local")
        except ConfigError as e:
            print(f"make figures: {e}", file=sys.stderr)
            return 1
    target = args.target or "local"
    params = {k: getattr(args, k) for k in PASSED_THROUGH if getattr(args, k) not in (None, "")}
    if "repetitions" in params:
        params["repetitions"] = int(params["repetitions"])
    if "resume_anyway" in params:
        params["resume_anyway"] = typed_setting(Path("make figures"), "resume_anyway", params["resume_anyway"], "bool")
    if args.replot:
        params.pop("resume", None)
        params.pop("resume_anyway", None)
        params["run_id"] = "latest"
    todo = notebooks(args.only)
    if not todo:
        print(f"no notebooks match {args.only!r} in {NOTEBOOKS_DIR}", file=sys.stderr)
        return 2
    try:
        settings = parse_settings(args.set, todo)
        per_notebook = {nb: parameters_for(nb, params, settings) for nb in todo}
    except ConfigError as e:
        print(f"make figures: {e}", file=sys.stderr)
        return 2
    done = {nb: already_completed(nb, per_notebook[nb]) for nb in todo}
    completed = [nb for nb in todo if done[nb]]
    for nb in completed:
        print(f"== {nb.name}: its run {done[nb].name} completed with these settings; skipped (RESUME)",
              file=sys.stderr, flush=True)
    todo = [nb for nb in todo if nb not in completed]
    plans = {} if args.replot or not todo else planned(todo, per_notebook, params, plan_only=args.plan_only)
    if args.plan_only:
        return 0 if plans or not todo else 1
    since = {}

    def points_done(p: "plan.NotebookPlan") -> int | None:
        return measured_points(p.experiment, since[p.experiment], target)[0] if p.experiment in since else None

    progress = plan.Progress(list(plans.values()), points_done=points_done) if plans else None
    stopper = Stopper().install()
    failures, ran, timing = [], [], {}
    unreachable = None
    for nb in todo:
        if stopper.stopped:
            break
        # The wall clock, as the points' own start and end times: on this VM time.monotonic fell
        # 16 s behind it over 29 minutes, and iomt's points outlasted their notebook.
        started_at = utc_now()
        timing.pop(experiment_of(nb), None)
        ran.append(nb)
        since[experiment_of(nb)] = started_at
        print(f"== {nb.name} {per_notebook[nb]}", file=sys.stderr, flush=True)
        if progress:
            progress.begin(plans[nb])
        try:
            out = run_notebook(nb, per_notebook[nb], log_output=not args.quiet, stopper=stopper)
            wall = seconds_since(started_at)
            in_points = measured_points(experiment_of(nb), started_at, target)
            measured = ""
            if not args.replot and in_points[0]:  # footprint measures as it packages: no points
                timing[experiment_of(nb)] = plan.harness_share(wall, in_points[1])
                measured = (f"; {in_points[0]} points measured in {in_points[1]:.0f} s, "
                            f"{timing[experiment_of(nb)]:.0%} of the time outside them")
            print(f"== {nb.name} done in {wall:.0f} s -> {_short(out)}{measured}", file=sys.stderr)
            if plans:
                plan.record(plans[nb], wall, "completed", in_points=in_points if in_points[0] else None)
                progress.end(plans[nb])
        except BaseException as e:  # papermill's PapermillExecutionError carries the cell's traceback
            if plans:
                plan.record(plans[nb], seconds_since(started_at), "interrupted" if stopper.stopped else "failed",
                            in_points=measured_points(experiment_of(nb), started_at, target))
                progress.end(plans[nb])
            if not stopper.stopped and not isinstance(e, Exception):
                raise
            if stopper.stopped:
                # The experiment marks its own run; a kernel that ended first leaves it "running".
                why = f"interrupted: make figures stopped by {stopper.name}"
                closed = close_unfinished(experiment_of(nb), started_at, "interrupted", why, target=target)
                print(f"== {nb.name} interrupted by {stopper.name}; measured rows are kept under data/"
                      + (f" ({', '.join(_short(d) for d in closed)} marked interrupted)" if closed else ""),
                      file=sys.stderr, flush=True)
                break
            failures.append(nb.name)
            print(f"== {nb.name} FAILED: {str(e).strip().splitlines()[-1] if str(e).strip() else e}",
                  file=sys.stderr)
            if host_stopped_answering(e):  # every notebook left would wait on the same silent host
                unreachable = nb
                break
    stopper.done()
    if progress:
        progress.close()
    print("\n" + summary([experiment_of(nb) for nb in completed + ran], None if args.replot else since,
                         None if args.replot else target, timing), flush=True)
    if stopper.stopped:
        print(f"\nstopped by {stopper.name}: {len(ran)} of {len(todo)} notebooks started", flush=True)
        return stopper.exit_code
    if unreachable is not None:
        left = todo[todo.index(unreachable) + 1:]
        print(f"\n{unreachable.name} stopped: a host stopped answering (above)"
              + (f"; {len(left)} notebooks not started" if left else "")
              + ". The rows measured are kept: once the host answers, go on with the same command and "
              "RESUME=latest", flush=True)
        return 1
    if failures:
        print(f"\nfailed notebooks: {', '.join(failures)} (see figures/<experiment>/*.failed.ipynb)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
