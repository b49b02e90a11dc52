"""Integration: SSHTarget against a real sshd in a network namespace (tests/sshhost.py), and the
time-to-ready experiment run end to end through it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from edgebench.errors import RemoteCommandError, TargetUnreachable
from edgebench.experiments import time_to_ready
from edgebench.results import load_meta, load_results
from edgebench.targets import LocalTarget, SSHTarget, connect
from edgebench.waiting import wait_until


def ssh_target(host, **kw) -> SSHTarget:
    opts = dict(key_file=host.key_file, known_hosts=host.known_hosts)
    opts.update(kw)
    return SSHTarget(f"root@{host.host}", **opts)


@pytest.fixture
def target(ssh_host):
    t = ssh_target(ssh_host)
    yield t
    t.close()


# -- commands ---------------------------------------------------------------------------

def test_run_returns_stdout_and_exit_code(target, ssh_host):
    r = target.run(["sh", "-c", "echo out; echo err >&2; exit 0"])
    assert (r.stdout, r.stderr, r.exit_code, r.ok) == ("out\n", "err\n", 0, True)
    r = target.run(["sh", "-c", "exit 7"], check=False)
    assert r.exit_code == 7 and not r.ok
    # It really runs behind the namespace's sshd: the connection comes from the veth's far end.
    assert target.run("echo $SSH_CONNECTION").stdout.split()[2] == ssh_host.host
    assert r.host == f"root@{ssh_host.host}"


def test_check_raises_naming_host_and_command(target, ssh_host):
    with pytest.raises(RemoteCommandError) as e:
        target.run(["sh", "-c", "echo broken-thing >&2; exit 3"])
    assert e.value.exit_code == 3
    assert e.value.host == f"root@{ssh_host.host}"
    assert ssh_host.host in str(e.value) and "exited 3" in str(e.value)
    assert "broken-thing" in str(e.value)


@pytest.mark.parametrize("command", [["sh", "-c", "kill -KILL $$"], ["sh", "-c", 'exec sh -c "kill -KILL \\$\\$"']])
def test_a_command_killed_by_a_signal_exits_128_plus_it_here_and_over_ssh(target, local, command):
    """As an OOM kill ends a command: the remote shell exec'd it, sshd reported an exit signal that
    paramiko does not read, and the result had no status, as if it had timed out (seen on the
    emulated debian-v2)."""
    assert [t.run(command, check=False).exit_code for t in (local, target)] == [137, 137]


def test_a_command_that_execs_leaves_no_file_on_the_host(target):
    """The remote shell writes its process group to a file that its exit removes: a command that
    exec'd at its top level replaced that shell, so nothing removed the file."""
    before = set(Path("/tmp").glob("edgebench-command-*.pgid"))  # the namespace's host shares /tmp
    assert target.run("exec echo replaced").stdout == "replaced\n"
    assert target.run("exec sh -c 'exit 5'", check=False).exit_code == 5
    assert set(Path("/tmp").glob("edgebench-command-*.pgid")) - before == set()


def test_command_timeout_gives_none_exit_code(target):
    started = time.monotonic()
    r = target.run(["sleep", "10"], timeout=1, check=False)
    assert r.exit_code is None
    assert time.monotonic() - started < 8


def test_a_command_that_times_out_is_ended_on_the_host_with_its_children(target, ssh_host):
    """Without a terminal, closing a timed-out command's channel signals nothing on the host: the
    command ran on there (a probe, a build), taking the device's CPU from the next measurement."""
    # 3 s, not 1: on a busy machine the shell must have started (and noted its group) first.
    r = target.run(["sh", "-c", "sleep 31.5; true"], timeout=3, check=False)
    assert r.exit_code is None
    assert wait_until(lambda: not running_in(ssh_host, "sleep\x0031.5"), 10, 0.1), "the command runs on"
    assert target.run(["true"]).ok


def test_ctrl_c_ends_the_command_on_the_host(target, ssh_host):
    """As Ctrl-C ends a local command's process group, and at once: an interrupted provisioning
    waited for NPB's build on the emulated device to finish, which nothing had ended."""
    import threading
    sent: list[float] = []

    def interrupt_once_it_runs():
        if wait_until(lambda: running_in(ssh_host, "sleep\x0032.5"), 10, 0.05):
            sent.append(time.monotonic())
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    interrupter = threading.Thread(target=interrupt_once_it_runs)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            target.run(["sh", "-c", "sleep 32.5; true"], timeout=60)
        raised = time.monotonic()
    finally:
        interrupter.join()
    assert sent and raised - sent[0] < 15, "Ctrl-C waited for the command"
    assert wait_until(lambda: not running_in(ssh_host, "sleep\x0032.5"), 10, 0.1), "the command runs on"
    assert target.run(["true"]).ok


def test_parameters_are_quoted(target, tmp_path):
    marker = f"/tmp/pwned-{uuid.uuid4().hex}"
    nasty = f"x; touch {marker}"
    try:
        r = target.run(["echo", nasty])
        assert r.stdout == nasty + "\n"
        r = target.run(["printf", "%s|", "$(id)", "`id`", "a b", "'q'", '"d"'])
        assert r.stdout == "$(id)|`id`|a b|'q'|\"d\"|"
        assert target.read_text(marker, missing_ok=True) is None
        assert not Path(marker).exists()  # the "remote" shares this machine's filesystem
    finally:
        Path(marker).unlink(missing_ok=True)


def test_put_get_roundtrip(target, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 300 + b"\n")
    remote_dir = f"/tmp/eb-ssh-it-{uuid.uuid4().hex}"
    try:
        target.run(["mkdir", "-p", remote_dir])
        target.put(src, f"{remote_dir}/file.bin")
        back = tmp_path / "sub" / "back.bin"
        target.get(f"{remote_dir}/file.bin", back)
        assert back.read_bytes() == src.read_bytes()
        digest = target.run(["sha256sum", f"{remote_dir}/file.bin"]).stdout.split()[0]
        assert digest == hashlib.sha256(src.read_bytes()).hexdigest()
        target.write_text(f"{remote_dir}/deep/t.txt", "héllo\n")
        assert target.read_text(f"{remote_dir}/deep/t.txt") == "héllo\n"
    finally:
        shutil.rmtree(remote_dir, ignore_errors=True)


def test_put_creates_parent_directories_like_local(target, tmp_path):
    """LocalTarget.put creates missing parents; the SSH target should behave the same."""
    src = tmp_path / "f.txt"
    src.write_text("x")
    remote_dir = f"/tmp/eb-ssh-it-{uuid.uuid4().hex}"
    try:
        LocalTarget().put(src, f"{remote_dir}/local/f.txt")
        assert Path(remote_dir, "local/f.txt").read_text() == "x"
        target.put(src, f"{remote_dir}/ssh/f.txt")
        assert Path(remote_dir, "ssh/f.txt").read_text() == "x"
    finally:
        shutil.rmtree(remote_dir, ignore_errors=True)


def test_facts_have_the_same_keys_as_local(target, ssh_host):
    remote, local = target.facts(), LocalTarget().facts()
    assert remote["target"] == f"root@{ssh_host.host}"
    assert remote["uid"] == 0 and remote["arch"] == local["arch"]
    assert set(remote) ^ set(local) == set(), "keys only one side has"


# -- host keys --------------------------------------------------------------------------

def test_unknown_host_key_is_refused(ssh_host, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(TargetUnreachable) as e:
        ssh_target(ssh_host, known_hosts=empty).connect()
    msg = str(e.value)
    assert "host key unknown" in msg and "accept_new_host_key" in msg and str(empty) in msg
    assert empty.read_text() == ""


def test_accept_new_host_key_records_it(ssh_host, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    t = ssh_target(ssh_host, known_hosts=kh, accept_new_host_key=True)
    try:
        assert t.connect().run("echo hi").stdout == "hi\n"
    finally:
        t.close()
    lines = [ln.split() for ln in kh.read_text().splitlines() if ln.strip()]
    assert [ssh_host.host] + ssh_host.host_public_key.split() in lines
    # Next time the recorded key is verified without accept_new_host_key.
    t = ssh_target(ssh_host, known_hosts=kh)
    try:
        assert t.connect().run("echo again").stdout == "again\n"
    finally:
        t.close()


@pytest.mark.parametrize("accept_new", [False, True])
def test_changed_host_key_is_refused(ssh_host, tmp_path, accept_new):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong_key = " ".join(other.with_name("other_key.pub").read_text().split()[:2])
    kh = tmp_path / "known_hosts"
    kh.write_text(f"{ssh_host.host} {wrong_key}\n")
    with pytest.raises(TargetUnreachable) as e:
        ssh_target(ssh_host, known_hosts=kh, accept_new_host_key=accept_new).connect()
    assert "does not match" in str(e.value)
    assert kh.read_text() == f"{ssh_host.host} {wrong_key}\n"  # not overwritten


def test_ssh_config_alias(ssh_host):
    for kw in ({"known_hosts": ssh_host.known_hosts}, {}):  # {}: UserKnownHostsFile from the config
        t = SSHTarget(ssh_host.alias, ssh_config=ssh_host.ssh_config, **kw)
        try:
            r = t.connect().run("echo $SSH_CONNECTION")
            assert r.stdout.split()[2] == ssh_host.host
            assert t.facts()["user"] == "root"
        finally:
            t.close()


def test_connect_passes_targets_through_and_connects_specs(ssh_host):
    t = ssh_target(ssh_host)
    assert connect(t) is t
    t2 = connect(f"root@{ssh_host.host}", key_file=ssh_host.key_file, known_hosts=ssh_host.known_hosts)
    try:
        assert isinstance(t2, SSHTarget) and t2._conn is not None  # connected at once
    finally:
        t2.close()


def test_unreachable_port(ssh_host):
    started = time.monotonic()
    with pytest.raises(TargetUnreachable) as e:
        SSHTarget(f"root@{ssh_host.host}:2222", key_file=ssh_host.key_file,
                  known_hosts=ssh_host.known_hosts, connect_timeout_s=2).connect()
    assert time.monotonic() - started < 10
    msg = str(e.value)
    assert f"root@{ssh_host.host}:2222" in msg and "cannot connect" in msg and "2 s" in msg


def stopped_sshd(host) -> list[int]:
    """Stops (SIGSTOP) every process of the host's namespace: a host that keeps its TCP
    connections and answers nothing, as a locked-up device does."""
    pids = [int(p) for p in subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True,
                                           text=True).stdout.split()]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    return pids


def resumed(pids: list[int]) -> None:
    """Lets the processes stopped_sshd stopped go on: the host answers again."""
    for pid in pids:
        os.kill(pid, signal.SIGCONT)


def running_in(host, cmdline: str) -> bool:
    """Whether a process of the host's namespace runs `cmdline` (its arguments joined by NULs)."""
    pids = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode() == cmdline:
                return True
        except OSError:
            continue
    return False


def test_a_host_that_stops_answering_fails_the_command_within_the_channel_timeout(ssh_host):
    """An emulated device whose guest locked up kept its TCP connection and answered nothing: each
    command waited paramiko's hour for a channel. sshd stopped (SIGSTOP) is such a host."""
    t = ssh_target(ssh_host, channel_timeout_s=3, connect_timeout_s=2)
    assert t.run(["true"]).ok
    sshd = stopped_sshd(ssh_host)
    try:
        started = time.monotonic()
        with pytest.raises(TargetUnreachable) as e:
            t.run(["true"])
        assert time.monotonic() - started < 15
        assert "no SSH channel opened within 3 s" in str(e.value)
        with pytest.raises(TargetUnreachable):  # connects anew, and fails within its connect timeout
            t.run(["true"])
        assert time.monotonic() - started < 30
    finally:
        resumed(sshd)
    assert t.run(["true"]).ok  # answering again: the target goes on
    t.close()


def test_a_command_that_times_out_on_a_host_gone_silent_blames_the_host(ssh_host):
    """A command in flight when the host went silent timed out like a slow app, and its row blamed
    the app; one more command now tells the two apart."""
    import threading
    t = ssh_target(ssh_host, channel_timeout_s=3, connect_timeout_s=2)
    slow = t.run(["sleep", "5"], timeout=1, check=False)
    assert slow.exit_code is None  # a slow command on a host that answers: timed out, as before
    stopped: list[int] = []

    def stop_once_it_runs():
        # Not after a fixed delay: on a busy machine the channel may not yet be open, or the
        # command not yet started.
        wait_until(lambda: running_in(ssh_host, "sleep\x005.1"), 3, 0.05)
        stopped.extend(stopped_sshd(ssh_host))

    stopper = threading.Thread(target=stop_once_it_runs)
    stopper.start()
    try:
        started = time.monotonic()
        with pytest.raises(TargetUnreachable) as e:
            t.run(["sleep", "5.1"], timeout=4, check=False)
        assert time.monotonic() - started < 15
    finally:
        stopper.join()
        resumed(stopped)
    assert "timed out after 4 s, and the host then opened no SSH channel within 3 s" in str(e.value)
    assert t.run(["true"]).ok
    t.close()


def test_a_timeout_the_timer_thread_marks_late_still_asks_whether_the_host_answers(ssh_host, monkeypatch):
    """invoke's timer closes the channel, then ends; a run that saw the channel closed before the
    timer thread ended got no exit status and no timeout, and returned a slow app's result without
    asking the host (CI failed so, on a busy machine). Here the timer silences the host, closes
    the channel and ends late, every time."""
    from fabric.runners import Remote

    closes = Remote.kill
    stopped: list[int] = []
    silence_the_host = False

    def kill_then_linger(self):
        if silence_the_host:
            stopped.extend(stopped_sshd(ssh_host))
        closes(self)
        time.sleep(1.5)  # still alive when the run sees the channel closed

    monkeypatch.setattr(Remote, "kill", kill_then_linger)
    t = ssh_target(ssh_host, channel_timeout_s=3, connect_timeout_s=2)
    slow = t.run(["sleep", "5"], timeout=1, check=False)
    assert slow.exit_code is None  # the host answers: a slow command's timeout, as before
    silence_the_host = True
    try:
        with pytest.raises(TargetUnreachable) as e:
            t.run(["sleep", "5"], timeout=1, check=False)
    finally:
        time.sleep(1.6)  # the timer has ended
        resumed(stopped)
    assert "timed out after 1 s, and the host then opened no SSH channel within 3 s" in str(e.value)
    assert t.run(["true"]).ok
    t.close()


def test_a_host_that_stops_answering_ends_the_sweep_and_the_run_resumes_where_it_stopped(ssh_host, tmp_path):
    """A sweep used to record a failed row per point left, each after the channel timeout (120 s on a
    device), for a host that was gone: it now stops at once, the run marked interrupted, and a
    resumed sitting measures the points that had not ended."""
    from types import SimpleNamespace
    from edgebench.experiments.sweep import sweep
    from edgebench.results import Run, ended_points

    t = ssh_target(ssh_host, channel_timeout_s=3, connect_timeout_s=2)
    facts = {"target": t.name}
    stopped: list[int] = []

    def swept(run):
        def measure(p, row):
            if p.rep == 3 and not stopped:
                stopped.extend(stopped_sshd(ssh_host))
            r = t.run(["echo", str(p.rep)])
            run.add(metric="echo", value=float(r.stdout), unit="n", **row)
        sweep(run, [SimpleNamespace(name="native")], reps=5, row_for=lambda p: dict(runtime="native", rep=p.rep),
              measure=measure, failed=("echo", "n"), desc="t", progress=False)

    started = time.monotonic()
    try:
        with pytest.raises(TargetUnreachable):
            with Run("unreachable_test", {}, facts, data_dir=tmp_path) as run:
                swept(run)
        assert time.monotonic() - started < 30  # not a wait per point left
    finally:
        resumed(stopped)
    meta = load_meta(run.dir)
    assert meta["status"] == "interrupted" and "stopped answering" in meta["error"]
    assert "RESUME=latest" in meta["error"]
    assert len(ended_points(run.dir)) == 2
    assert not (load_results(run.dir).status == "failed").any()  # a silent host is not the point's failure
    with Run("unreachable_test", {}, facts, data_dir=tmp_path, run_id=run.run_id, resume=True,
             sitting={"resumed": True}) as again:
        swept(again)
    df = load_results(run.dir)
    assert sorted(df.value) == [1.0, 2.0, 3.0, 4.0, 5.0] and (df.status == "ok").all()
    assert [s["status"] for s in load_meta(run.dir)["sittings"]] == ["interrupted", "completed"]
    t.close()


# -- the experiment over SSH --------------------------------------------------------------

def edgebench_procs_in_ns(host) -> list[str]:
    """Processes inside the namespace that edgebench started (apps, probes, launchers)."""
    pids = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True).stdout.split()
    found = []
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = [ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                     if ln.startswith("State:")]
        except OSError:
            continue
        if state and "Z" in state[0]:
            continue
        if ".cache/edgebench" in args or "edgebench-launch" in args:
            found.append(f"{pid}: {args}")
    return found


TTR_PARAMS = dict(runtimes="native", apps="go-http", repetitions=2, protocols="fair", caches="warm",
                  profile="quick", cpus="1", memory="256m", progress=False)


def test_time_to_ready_over_ssh_matches_a_local_run(ssh_host, cgroups_ready, no_leftovers):
    tag = uuid.uuid4().hex[:8]
    dirs = []
    try:
        remote_dir = time_to_ready.run(time_to_ready.Params(target=ssh_target(ssh_host), run_id=f"it-ssh-{tag}",
                                                            **TTR_PARAMS))
        dirs.append(remote_dir)
        local_dir = time_to_ready.run(time_to_ready.Params(target="local", run_id=f"it-local-{tag}", **TTR_PARAMS))
        dirs.append(local_dir)

        remote, local = load_results(remote_dir), load_results(local_dir)
        ok = remote[(remote.metric == "time_to_ready") & (remote.status == "ok")]
        assert len(ok) == 2, remote[["metric", "status", "error"]].to_string()
        assert (remote.status == "ok").all(), remote[remote.status != "ok"][["metric", "error"]].to_string()
        assert list(remote.columns) == list(local.columns)
        assert set(remote.metric) == set(local.metric)
        assert set(remote.target) == {f"root@{ssh_host.host}"}
        assert set(local.target) == {"local"}
        # The limits held on the SSH target too.
        assert set(ok.cpus_applied) == {1.0} and set(ok.memory_mb_applied) == {256.0}
        assert set(ok.cpuset_applied.astype(str)) == {"0"}
        assert (ok.value > 0).all() and (ok.value < 60_000).all()

        meta = load_meta(remote_dir)
        assert meta["status"] == "completed"
        assert meta["target"]["target"] == f"root@{ssh_host.host}"
        assert meta["target"]["uid"] == 0
        assert load_meta(local_dir)["target"]["target"] == "local"
        assert edgebench_procs_in_ns(ssh_host) == []
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


def test_time_to_ready_without_limits_creates_no_cgroup(ssh_host, no_leftovers):
    """Without cpus/memory there is nothing to limit: the native fair protocol runs as a plain
    process (no cgroup needed, so a target without root or cgroups can still be measured)."""
    run_dir = None
    try:
        # "" is no limit (as None was): the record's cpus and memory are text.
        run_dir = time_to_ready.run(time_to_ready.Params(
            target=ssh_target(ssh_host), run_id=f"it-ssh-nolimits-{uuid.uuid4().hex[:8]}",
            **dict(TTR_PARAMS, cpus="", memory="", repetitions=1)))
        df = load_results(run_dir)
        ttr = df[df.metric == "time_to_ready"]
        assert list(ttr.status) == ["ok"], ttr.error.tolist()
        assert ttr.cpus_applied.isna().all() and ttr.memory_mb_applied.isna().all()
        probes = [json.loads(p.read_text()) for p in (run_dir / "raw").glob("*probe-*.json")]
        assert probes and all("/edgebench/" not in (p["limits_applied"]["cgroup_path"] or "") for p in probes)
        assert edgebench_procs_in_ns(ssh_host) == []
    finally:
        if run_dir:
            shutil.rmtree(run_dir, ignore_errors=True)


def test_a_silent_host_ends_the_session_without_waiting_on_its_clean_up(ssh_host, capsys):
    """Clean-up ran one command after another on a host that answered none, each waiting its
    timeouts with Ctrl-C deferred; one more try now decides, and what is left is said."""
    from edgebench.experiments.common import session

    t = ssh_target(ssh_host, channel_timeout_s=3, connect_timeout_s=2)
    stopped: list[int] = []
    try:
        with pytest.raises(TargetUnreachable):
            with session(t, "native", f"it-silent-{uuid.uuid4().hex[:6]}") as (tgt, selection):
                assert [rt.name for rt in selection.runtimes] == ["native"]
                stopped = stopped_sshd(ssh_host)
                started = time.monotonic()
                tgt.run(["true"])
        assert time.monotonic() - started < 20
    finally:
        resumed(stopped)
    assert f"{t.name} does not answer: what this run started there is left as it is" in capsys.readouterr().err


@pytest.mark.slow  # executes notebooks in a kernel
def test_make_figures_knows_a_notebook_ended_by_a_silent_host_from_its_own_failure(tmp_path):
    """make figures stops at a notebook whose cell raised TargetUnreachable, instead of starting the
    next ones on the same silent host; it learns that from papermill's error, run here for real."""
    import nbformat
    import papermill as pm
    from edgebench.drivers.figures import host_stopped_answering
    from edgebench.drivers.lab import KERNEL_NAME, ensure_kernel

    ensure_kernel()
    errors = {}
    for name, raised in [("silent", "TargetUnreachable('dev: no SSH channel opened')"),
                         ("own", "EdgebenchError('a fault of the notebook')")]:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"from edgebench.errors import *\nraise {raised}")]
        nbformat.write(nb, tmp_path / f"{name}.ipynb")
        with pytest.raises(Exception) as e:
            pm.execute_notebook(str(tmp_path / f"{name}.ipynb"), str(tmp_path / f"{name}.out.ipynb"),
                                kernel_name=KERNEL_NAME, progress_bar=False)
        errors[name] = e.value
    assert host_stopped_answering(errors["silent"])
    assert not host_stopped_answering(errors["own"])
