"""LocalTarget runs the same quoted shell commands an SSH target gets; connect() picks the kind."""

import os
import socket
import time
from pathlib import Path

import pytest
from edgebench.errors import ConfigError, RemoteCommandError, TargetUnreachable
from edgebench.runtimes.tags import is_alive
from edgebench.targets import LocalTarget, connect
from edgebench.waiting import wait_until


def test_arguments_are_passed_literally(local, tmp_path):
    args = [f"a b; touch {tmp_path}/semi", f"$(touch {tmp_path}/subst)", f"`touch {tmp_path}/tick`",
            "it's", 'say "hi"', "$HOME", "*", f"x && touch {tmp_path}/and | cat > {tmp_path}/pipe"]
    r = local.run(["printf", "%s\\n", *args])
    assert r.stdout.splitlines() == args
    assert list(tmp_path.iterdir()) == []


def test_result_has_stdout_stderr_and_exit_code(local):
    r = local.run(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    assert (r.stdout, r.stderr, r.exit_code, r.ok, r.host) == ("out\n", "err\n", 3, False, "local")
    assert local.run(["true"]).ok


def test_check_raises_naming_host_command_and_stderr_tail(local):
    with pytest.raises(RemoteCommandError) as e:
        local.run(["sh", "-c", "for i in $(seq 20); do echo line$i >&2; done; exit 4"])
    msg = str(e.value)
    assert "on local:" in msg and "seq 20" in msg and "exited 4" in msg
    assert "line20" in msg and "line13" in msg and "line12" not in msg
    assert (e.value.host, e.value.exit_code) == ("local", 4)


def test_timeout_kills_the_process_group(local):
    start = time.monotonic()
    r = local.run(["sh", "-c", "sleep 30 & echo $!; wait"], timeout=1, check=False)
    assert r.exit_code is None and time.monotonic() - start < 10
    child = int(r.stdout.split()[0])
    assert wait_until(lambda: not is_alive(local, child), 3, 0.05)
    with pytest.raises(RemoteCommandError, match="timed out"):
        local.run(["sleep", "5"], timeout=0.2)


def test_files(local, tmp_path):
    remote = str(tmp_path / "deep" / "dir" / "f.txt")
    local.write_text(remote, "héllo\nwörld\n")
    assert local.read_text(remote) == "héllo\nwörld\n"
    assert local.read_text(str(tmp_path / "missing"), missing_ok=True) is None
    with pytest.raises(RemoteCommandError):
        local.read_text(str(tmp_path / "missing"))
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)))
    local.put(src, str(tmp_path / "up" / "a.bin"))
    local.get(str(tmp_path / "up" / "a.bin"), tmp_path / "down" / "b.bin")
    assert (tmp_path / "down" / "b.bin").read_bytes() == bytes(range(256))


def test_upload_if_changed_copies_only_changes(local, tmp_path):
    src, remote = tmp_path / "app", tmp_path / "remote" / "bin" / "app"
    src.write_bytes(b"v1")
    assert local.upload_if_changed(src, str(remote), mode="755") == str(remote)
    assert remote.read_bytes() == b"v1" and os.access(remote, os.X_OK)
    os.utime(remote, ns=(1_000_000_000, 1_000_000_000))
    local.upload_if_changed(src, str(remote))
    assert remote.stat().st_mtime_ns == 1_000_000_000  # same bytes: not copied
    src.write_bytes(b"v2")
    local.upload_if_changed(src, str(remote))
    assert remote.read_bytes() == b"v2"


def test_upload_replaces_a_program_that_is_running(local, tmp_path):
    """Two runs on one device share its workspace: a new probe or app must not fail with "Text
    file busy" because the other run is executing the old one, nor stop that one."""
    import shutil
    import subprocess
    remote = tmp_path / "bin" / "probe"
    remote.parent.mkdir()
    shutil.copy("/bin/sleep", remote)
    running = subprocess.Popen([str(remote), "30"])
    try:
        local.upload_if_changed(Path("/bin/true"), str(remote), mode="755")
        assert remote.read_bytes() == Path("/bin/true").read_bytes() and os.access(remote, os.X_OK)
        assert running.poll() is None
        assert [p.name for p in remote.parent.iterdir()] == ["probe"]  # nothing staged is left
    finally:
        running.kill()
        running.wait()


def test_facts(local):
    f = local.facts()
    assert f["target"] == "local" and f["arch"] == os.uname().machine and f["kernel"] == os.uname().release
    assert isinstance(f["cores"], int) and f["cores"] >= 1
    assert isinstance(f["memory_mb"], int) and f["memory_mb"] > 0
    assert isinstance(f["swap_mb"], int)
    assert f["cgroup_version"] in (1, 2, None)
    assert f["kvm"] in ("yes", "no", "no-permission", "no-guests")
    # Tool versions are not host facts: meta.json gets them from the registry (edgebench.provisioning.parts).
    assert not {"docker", "wrk", "qemu", "ops", "lxd"} & set(f)
    assert f["uid"] == os.getuid()


@pytest.mark.parametrize("spec", ["local", "localhost", "LOCAL", "", None])
def test_connect_local(spec):
    assert isinstance(connect(spec), LocalTarget)


def test_connect_passes_a_target_through(local):
    assert connect(local) is local


@pytest.mark.parametrize("spec", ["bad spec with spaces", "a@b@c", "host:port"])
def test_connect_refuses_a_malformed_spec(spec):
    with pytest.raises(ConfigError, match="is not 'local'"):
        connect(spec)


def test_connect_to_nothing_listening_says_what_to_check():
    start = time.monotonic()
    with pytest.raises(TargetUnreachable) as e:
        connect("root@127.0.0.1:1", connect_timeout_s=2)
    msg = str(e.value)
    assert msg.startswith("root@127.0.0.1:1:")
    assert "sshd" in msg and "address" in msg
    assert time.monotonic() - start < 10


def test_a_port_only_an_earlier_servers_connections_use_is_free(local):
    """nginx names its port: after one point, the connections its server had accepted are still
    there (established, closing, TIME-WAIT), and the next start must get the same port, not a
    refusal ("something already listens there"): such sockets do not stop a listener binding it."""
    with socket.socket() as server, socket.socket() as client:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("0.0.0.0", 0))
        server.listen()
        port = server.getsockname()[1]
        client.connect(("127.0.0.1", port))
        accepted, _ = server.accept()
        with accepted:
            server.close()
            assert local.free_port(port) == port
            with socket.socket() as next_server:
                next_server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                next_server.bind(("0.0.0.0", port))
