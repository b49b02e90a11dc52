"""A plain process on the target. With limits, it runs inside a cgroup the library creates
(v1 or v2) with CPU quota, memory limit and CPU pinning, read back after start."""

from __future__ import annotations

import shlex

from edgebench.apps import BuiltApp
from edgebench.cgroups import NativeCgroup, memory_thrash, oom_kills, oom_reason, read_limits
from edgebench.runtimes.base import Runtime, app_env
from edgebench.runtimes.contract import Artifact, Availability, BatchOutcome, Instance, LaunchPlan, Limits
from edgebench.runtimes.tags import LAUNCH_TAG, is_alive, kill_pid
from edgebench.targets import sh


class NativeRuntime(Runtime):
    name = "native"
    colour = "#2ca02c"
    min_memory_mb = 4
    shares_host_filesystem = True
    network_modes = ("host",)

    def availability(self) -> Availability:
        return Availability(True)

    def describe(self) -> str:
        facts = self.target.facts()
        who = "root" if facts.get("uid") == 0 else "not root: limits need a delegated cgroup"
        return f"kernel {facts.get('kernel')}, cgroup v{facts.get('cgroup_version')}, {who}"

    def package(self, built: BuiltApp, build: str = "native") -> Artifact:
        # Nothing to wrap: the artifact is the binary (Go) or the script bundle (Node). What it
        # needs on the device is that plus, for Node, node with the libraries it loads beyond the
        # C runtime (what the paper's pkg-built binary bundles): Debian's node binary alone is a
        # 20 KB launcher for libnode, which would make every image look thousands of times larger.
        stored = (built.size_bytes + built.details.get("node_binary_bytes", 0)
                  + built.details.get("node_library_bytes", 0))
        return Artifact(self.name, built.app.name, built.remote_path, stored, built.size_bytes,
                        built, build="native", details=dict(built.details))

    def _cgroup(self, name: str, limits: Limits) -> NativeCgroup | None:
        if not limits.any:
            return None
        cg = NativeCgroup(self.target, name)
        try:
            cg.create(limits.cpus, limits.memory_mb, limits.cpuset, limits.swap)
        except BaseException:
            cg.destroy()  # a failed write or a Ctrl-C mid-way: no plan holds it yet to clean up
            raise
        return cg

    def launch_plan(self, artifact: Artifact, limits: Limits, port: int) -> LaunchPlan:
        self.check_limits(artifact.app, limits)
        name = self.new_name(artifact.app)
        # Tagged, so a service its launcher lost is still found (Runtime.leftovers); a batch program
        # is not (its own cgroup finds it, and `env` would add its exec to the counted faults).
        argv = ["env", f"{LAUNCH_TAG}={name}", *app_env(artifact.built, limits, port),
                *artifact.built.service_argv(port)]
        plan = LaunchPlan(self.name, artifact.app, name, argv, port, limits=limits,
                          stdout_path=f"{self.logs_dir()}/{name}.out",
                          stderr_path=f"{self.logs_dir()}/{name}.err", network_path="loopback")
        self.target.run(["mkdir", "-p", self.logs_dir()])
        cgroup = self._cgroup(name, limits)  # created before the clock starts
        if cgroup:
            plan.argv = cgroup.wrap(argv)
            plan.state["cgroup"] = cgroup
        return plan

    def attach(self, plan: LaunchPlan, launcher_pid: int | None) -> Instance:
        # The launcher execs into the app, so the probe's child PID is the app's PID.
        applied = read_limits(self.target, launcher_pid) if launcher_pid else None
        return Instance(self.name, plan.app, plan.name, plan.port, f"http://127.0.0.1:{plan.port}",
                        launcher_pid, plan.limits, applied, plan.network_path, plan)

    def app_output(self, instance: Instance) -> str:
        return self.target.read_text(instance.plan.stdout_path, missing_ok=True) or ""

    def failure_reason(self, plan: LaunchPlan) -> str | None:
        err = self.target.read_text(plan.stderr_path, missing_ok=True) or ""
        cgroup = plan.state.get("cgroup")
        # dirs[0]: the memory controller's directory (v1), the only one (v2).
        oom = oom_reason(oom_kills(self.target, cgroup_dirs=cgroup.dirs[:1])) if cgroup else None
        tail = err.strip().splitlines()[-3:]
        return "; ".join(x for x in [oom, " | ".join(tail)] if x) or None

    def memory_thrash(self, plan: LaunchPlan) -> str | None:
        cgroup = plan.state.get("cgroup")
        return memory_thrash(self.target, cgroup_dirs=cgroup.dirs[:1]) if cgroup else None

    def stop_plan(self, plan: LaunchPlan, pid: int | None = None) -> None:
        if pid and is_alive(self.target, pid):
            kill_pid(self.target, pid)
        cgroup = plan.state.pop("cgroup", None)
        if cgroup:
            cgroup.destroy()  # also kills anything the app forked

    def batch_plan(self, artifact: Artifact, args: list[str], limits: Limits) -> LaunchPlan:
        name = self.new_name(artifact.app)
        env = app_env(artifact.built, limits)
        argv = [*(["env", *env] if env else []), *artifact.built.argv, *args]
        plan = LaunchPlan(self.name, artifact.app, name, argv, 0, limits=limits,
                          stdout_path=f"{self.logs_dir()}/{name}.out",
                          stderr_path=f"{self.logs_dir()}/{name}.err", network_path="none")
        # Its own cgroup even without limits: that is where its faults are counted.
        self.count_in_cgroup(plan, self._cgroup(name, limits))
        return plan

    def batch_outcome(self, plan: LaunchPlan) -> BatchOutcome:
        cgroup = plan.state.get("cgroup")
        if cgroup is None or not plan.limits.any:
            return BatchOutcome()
        applied = read_cgroup_dir_limits(self.target, cgroup)
        return BatchOutcome(applied, oom_killed=bool(applied and applied.oom_kills))


def read_cgroup_dir_limits(target, cgroup: NativeCgroup):
    """Limits of a cgroup whose batch process has exited, read through a short-lived member."""
    placeholder = sh(cgroup.wrap(["sleep", "5"]))
    joined = f"grep -q {shlex.quote('edgebench/' + cgroup.name)} /proc/$p/cgroup"
    pid = int(target.run(f"{placeholder} >/dev/null 2>&1 & p=$!; "
                         f"for i in $(seq 200); do {joined} && break; sleep 0.01; done; echo $p").stdout.strip())
    try:
        return read_limits(target, pid)
    finally:
        target.run(["kill", "-9", str(pid)], check=False)
