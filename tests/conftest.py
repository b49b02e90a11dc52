"""Shared fixtures. A test that needs a part this machine lacks skips with the reason, unless
EDGEBENCH_REQUIRE names that part (CI provisioned it): then the test fails instead."""

from __future__ import annotations

import inspect
import os
import shlex
import shutil
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# The runs tests make go to a folder of their own, not to the project's data/ and figures/, where
# `make replot`, `make compare` and `make report` would take them for the user's own results.
# Set before edgebench is imported: its paths are read once.
# Not even to the user's own EDGEBENCH_DATA_DIR.
_TEST_OUTPUTS = Path(tempfile.mkdtemp(prefix="edgebench-test-outputs-"))
os.environ["EDGEBENCH_DATA_DIR"] = str(_TEST_OUTPUTS / "data")
os.environ["EDGEBENCH_FIGURES_DIR"] = str(_TEST_OUTPUTS / "figures")

from edgebench.provisioning import shared_fixtures
from edgebench.runtimes import leftovers_on, tags
from edgebench.runtimes.tags import RUN_TAG_PREFIX_ENV
from edgebench.targets import CommandResult, LocalTarget, Target
from edgebench.waiting import wait_until

# ops with its Nanos kernel, Unikraft images and NPB binaries, where `make test` laid them out from
# ../shared in the tests' own cache: these, not whatever the user has, are what the tests run.
os.environ.update(shared_fixtures.environment())

REQUIRED = {p.strip() for p in os.environ.get("EDGEBENCH_REQUIRE", "").split(",") if p.strip()}


def need(part: str, missing_reason: str | None) -> None:
    """Skip (or fail, if the part is required) when missing_reason is not None. Only an
    `integration` test may ask (see uses_a_real_part)."""
    if _running is not None and _running.get_closest_marker("integration") is None:
        pytest.fail(f"{_running.nodeid} reached need({part!r}) through a path the collection did not read, so "
                    "`make test-fast` runs it: call need() in the test, a fixture it uses, or a function of "
                    "the tests they call (uses_a_real_part in tests/conftest.py)")
    if missing_reason is None:
        return
    if part in REQUIRED:
        pytest.fail(f"{part} is required (EDGEBENCH_REQUIRE={','.join(sorted(REQUIRED))}) "
                    f"but unavailable: {missing_reason}")
    pytest.skip(f"{part} unavailable: {missing_reason}")


# -- which tests `make test-fast` leaves out -------------------------------------------------------
# A test that uses a real part (Docker, LXD, QEMU, sshd, cgroups, a program such as wrk) reaches
# need() for it, as every test must to skip where the part is missing: in its body, in a fixture
# it uses, or in a function of the tests that those call. Read from the code at collection, that
# is what marks a test `integration`: there is no marker to write, and so none to forget. need()
# fails an unmarked test that still reached it (a path this reading does not follow).
TESTS_DIR = str(Path(__file__).parent) + os.sep
_running: pytest.Item | None = None  # the test running now in this process (need() asks)
# need() by where it is defined: a test module's `from conftest import need` is this need. (Not the
# function itself: whatever names it reaches need, and the reading below must not.)
NEED = (need.__code__.co_filename, need.__qualname__)


def reaches_need(function: object, seen: dict[object, bool]) -> bool:
    """Whether `function` is need(), or a function of the tests naming one that reaches it (named
    is enough: a test passing such a function on uses the part too)."""
    if not inspect.isfunction(function):
        return False
    function = inspect.unwrap(function)
    if not function.__code__.co_filename.startswith(TESTS_DIR):
        return False
    if (function.__code__.co_filename, function.__qualname__) == NEED:
        return True
    if function not in seen:
        seen[function] = False  # while it is being read: a helper that calls itself ends here
        names = {name for code in code_objects(function.__code__) for name in code.co_names}
        seen[function] = any(reaches_need(function.__globals__.get(name), seen) for name in names)
    return seen[function]


def code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and the code of every function, lambda and comprehension inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from code_objects(const)


def uses_a_real_part(item: pytest.Item, seen: dict[object, bool]) -> bool:
    """The test, or a fixture it uses (directly or through other fixtures), reaches need()."""
    if reaches_need(getattr(item, "function", None), seen):
        return True
    # pytest's own record of the fixtures resolved for the test (public API has none at collection).
    fixtures = getattr(item, "_fixtureinfo", None)
    return bool(fixtures) and any(reaches_need(definition.func, seen)
                                  for name in item.fixturenames
                                  for definition in fixtures.name2fixturedefs.get(name, ()))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: dict[object, bool] = {}
    for item in items:
        if uses_a_real_part(item, seen):
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    global _running
    _running = item
    try:
        return (yield)
    finally:
        _running = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """The library names a program it cannot find (MissingTool): that is a missing part, so it goes
    through need() like every other one, whichever test ran into it."""
    from edgebench.errors import MissingTool
    try:
        return (yield)
    except MissingTool as e:
        need(e.tool, str(e))


def plant_tree(root: Path, tree: Path) -> Path:
    """A recorded sysfs tree under root, from a .tree file (tests/data/*/*.tree): `path = content`
    lines are files, `path -> target` lines symlinks, `#` lines comments."""
    for line in tree.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if " -> " in line:
            path, target = line.split(" -> ", 1)
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).symlink_to(target)
        else:
            path, _, value = line.partition(" = ")
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(value + "\n")
    return root


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice), so tests never collide on a fixed one."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cgroup_roots() -> list[str]:
    """Every mounted cgroup hierarchy (v1: one per controller; v2: one)."""
    with open("/proc/mounts") as mounts:
        return [f.split()[1] for f in mounts if f.split()[2] in ("cgroup", "cgroup2")]


@pytest.fixture(autouse=True)
def close_figures():
    """Every test's figures closed after it: matplotlib keeps pyplot figures until then (and warns
    past 20). Only where a test drew one; importing pyplot for every test would cost seconds."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


@pytest.fixture(scope="session")
def local():
    return LocalTarget()


@pytest.fixture(scope="session")
def wrk_ready(local):
    need_tool(local, "wrk")
    return True


@pytest.fixture(scope="session")
def docker_ready(local):
    from edgebench.runtimes.docker import DockerRuntime
    why = DockerRuntime(local).availability()
    need("docker", None if why else why.reason)
    return True


@pytest.fixture(scope="session")
def lxd_ready(local):
    from edgebench.runtimes.lxd import LxdRuntime
    why = LxdRuntime(local).availability()
    need("lxd", None if why else why.reason)
    return True


def need_tool(target, tool: str) -> None:
    """A program the experiments run on the target (make provision installs them)."""
    need(tool, None if target.which(tool) else f"no `{tool}` on {target.name} (make provision installs it)")


@pytest.fixture(scope="session")
def cgroups_ready(local):
    facts = local.facts()
    reason = None
    if facts.get("cgroup_version") not in (1, 2):
        reason = "no cgroup filesystem"
    elif facts.get("uid") != 0:
        reason = "creating cgroups needs root"
    need("cgroups", reason)
    return True


def device_log(message: str) -> None:
    print(f"[device] {message}", file=sys.stderr, flush=True)


@pytest.fixture(scope="module")
def debian_v2():
    """The emulated cgroup v2 device (`make device NAME=debian-v2`) as an SSH target, with Docker
    and LXD provisioned on it as `make provision` does, and nodejs and linux-perf, which its tests
    run (device_prep.py). Built once and cached (EDGEBENCH_DEVICES_DIR); booted for the module
    unless it was running, and then stopped again: an emulated machine left running would slow
    every later test. `make test` runs the device's tests in a pytest session of their own, beside
    this machine's (tests/run.py)."""
    import device_prep
    from edgebench.devices import device_spec, image, machine
    from edgebench.targets import connect
    spec = device_spec("debian-v2")
    missing = image.host_missing(spec)
    need("device", "building and booting a device needs root" if os.geteuid() != 0 else
         f"no {', '.join(missing)} here (`make provision FOR_TESTS=1` installs them)" if missing else None)
    image.build(spec, device_log)
    was_running = machine.running(spec) is not None
    machine.start(spec, device_log)
    try:
        with connect(spec.name) as target:
            need("device", device_prep.prepare(target))
            yield target
    finally:
        if not was_running:
            machine.stop(spec, device_log)


@pytest.fixture(scope="session")
def ssh_host(tmp_path_factory):
    import sshhost
    need("ssh", sshhost.unavailable_reason())
    with sshhost.ssh_host(tmp_path_factory.mktemp("sshhost")) as host:
        yield host


# Everything this test session starts is named after a run tag with this prefix, so the leftover
# checks see only this session's, not another run's on the same machine (runtimes/tags.py).
TAG_PREFIX = f"t{os.getpid()}-"
os.environ[RUN_TAG_PREFIX_ENV] = TAG_PREFIX


# What a test may take from the environment it runs in: what CI says (EDGEBENCH_REQUIRE), the
# slow tier, this session's own settings above, and where the user keeps parts edgebench does not
# build (Unikraft images, NPB, wheels, the LXD mirror, the devices' cache), which only make more
# tests run. Every other EDGEBENCH_* variable (a target, a fleet's ssh config, a launch override)
# would change what a test sees, so each test runs without them.
ALLOWED_ENV = {"EDGEBENCH_REQUIRE", "EDGEBENCH_SLOW", "EDGEBENCH_DATA_DIR", "EDGEBENCH_FIGURES_DIR", RUN_TAG_PREFIX_ENV,
               "EDGEBENCH_UNIKRAFT_IMAGES", "EDGEBENCH_NPB_DIR", "EDGEBENCH_NPB_TARBALL", "EDGEBENCH_WHEELS_DIR",
               "EDGEBENCH_LXD_MIRROR", "EDGEBENCH_LXD_SUITE", "EDGEBENCH_LXD_CACHE", "EDGEBENCH_DEVICES_DIR"}


@pytest.fixture(autouse=True)
def _no_user_edgebench_environment(monkeypatch):
    for name in [k for k in os.environ if k.startswith("EDGEBENCH_") and k not in ALLOWED_ENV]:
        monkeypatch.delenv(name)


def leftovers() -> list[str]:
    """Anything this session started that is still there, of every registered runtime."""
    return leftovers_on(LocalTarget(), TAG_PREFIX)


def vm_tagged_processes() -> list[tuple[int, str]]:
    """[(pid, comm)] of this session's tagged launch processes still alive (ops, QEMU, native apps)."""
    return tags.tagged(LocalTarget(), f"{tags.LAUNCH_TAG}=eb-{TAG_PREFIX}", prefix=True)


def redis_set_get(port: int) -> bytes:
    """A Redis at 127.0.0.1:port asked to SET k v and GET k: its replies, as they came."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"SET k v\r\nGET k\r\n")
        got = b""
        while not got.endswith(b"v\r\n") and len(got) < 100:
            chunk = s.recv(100)
            if not chunk:
                break
            got += chunk
    return got


def qemu_alive(pid: int | None) -> bool:
    """Whether a QEMU process (or any) still runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line for line in f)
    except (OSError, TypeError):
        return False


def sigint_default() -> None:
    """A test run started in the background (`cmd &`) inherits SIGINT ignored, and so would the
    child; the child must see Ctrl-C as a user at a terminal does."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


_INTERRUPTED = """
import sys
from edgebench.experiments import time_to_ready
time_to_ready.run(time_to_ready.Params(runtimes=sys.argv[2], apps="go-http", repetitions=20, profile="quick",
                                       protocols="fair", caches="warm", cpus="1", memory="128m", run_id=sys.argv[1],
                                       progress=False))
"""


def interrupt_while_a_vm_boots(runtime: str, sig, data_dir) -> None:
    """Time to ready of `runtime` in a child process, sent `sig` once its first QEMU is up and the
    app is not yet: the child must die of the signal (as Python does for SIGINT) with no VM left."""
    import os
    import signal
    import subprocess
    import sys
    import time
    env = dict(os.environ, EDGEBENCH_DATA_DIR=str(data_dir))
    proc = subprocess.Popen([sys.executable, "-c", _INTERRUPTED, f"{runtime}-interrupt-{int(sig)}", runtime],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_default)
    try:
        def qemu_up() -> bool:
            if any(comm.startswith("qemu") for _, comm in vm_tagged_processes()):
                return True
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            return False

        assert wait_until(qemu_up, 120, 0.05), "no VM started within 120 s"
        time.sleep(0.3)  # booting: QEMU is up, the app not yet
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGINT, err[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not vm_tagged_processes()


@pytest.fixture
def no_leftovers():
    """Use in every test that starts something: it must all be gone afterwards."""
    before = leftovers()
    yield
    after = [x for x in leftovers() if x not in before]
    assert not after, f"left running: {after}"



class ScriptedTarget(Target):
    """A target that runs nothing: it answers commands by substring and records every command,
    what each was given on stdin (`Target.write_text` writes through `cat >` with stdin) and every
    upload. Unit tests of what a library part runs on a target (provisioning, launch plans).

    answers: [(substring, stdout | (stdout, code) | callable(cmd) -> (stdout, code))], the first
    match wins; a command nothing matches succeeds with no output. facts: overrides of the
    default facts (a root x86_64 Debian machine with cgroup v2 and KVM); `_facts` may be changed
    afterwards too. read_only: prefixes of the commands that only read (see `ran`, `changing`)."""

    is_local = True

    def __init__(self, answers, facts=None, read_only: tuple[str, ...] = ()):
        super().__init__()
        self.name = "scripted"
        self.answers = answers
        self.read_only = tuple(read_only)
        self.commands: list[str] = []
        self.stdins: list[tuple[str, str]] = []   # (command, what it got on stdin)
        self.uploads: list[str] = []
        self._facts = {"arch": "x86_64", "kernel": "6.1.0-18-amd64", "uid": 0, "user": "root",
                       "home": "/root", "cgroup_version": 2, "kvm": "yes", "target": "scripted", **(facts or {})}

    def facts(self, refresh=False):
        return self._facts

    def _exec(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        if stdin is not None:
            self.stdins.append((cmd, stdin))
        for needle, answer in self.answers:
            if needle in cmd:
                out, code = (answer(cmd) if callable(answer) else answer if isinstance(answer, tuple)
                             else (answer, 0))
                return CommandResult(self.name, cmd, out, "" if code == 0 else "scripted failure", code, 0.0)
        return CommandResult(self.name, cmd, "", "", 0, 0.0)

    def put(self, local, remote):
        self.uploads.append(remote)

    def get(self, remote, local):
        raise AssertionError("not used")

    def written(self, remote: str) -> str | None:
        """The text last written to `remote` with write_text, or None."""
        texts = [text for cmd, text in self.stdins if cmd.endswith(f"cat > {shlex.quote(remote)}")]
        return texts[-1] if texts else None

    def ran(self, needle: str) -> list[str]:
        """Commands (other than the first read-only kind: provisioning's survey and version
        scripts) containing needle."""
        return [c for c in self.commands if needle in c and not (self.read_only and c.startswith(self.read_only[0]))]

    def changing(self) -> list[str]:
        """Every command that does not start with one of the read-only prefixes."""
        return [c for c in self.commands if not (self.read_only and c.startswith(self.read_only))]


def pytest_sessionfinish(session, exitstatus):
    """The tests' run outputs are kept only when something failed (to read what it measured)."""
    if exitstatus == 0:
        shutil.rmtree(_TEST_OUTPUTS, ignore_errors=True)
    else:
        print(f"\nthe test runs' data and figures: {_TEST_OUTPUTS}")
