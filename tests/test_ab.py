"""ApacheBench: command lines, the parser on recorded outputs, and a real run against a local server."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import free_port, need_tool
from edgebench.errors import ConfigError, EdgebenchError
from edgebench.tools.load import Ab, LoadSettings, ab_command, parse_ab
from edgebench.waiting import wait_until

DATA = Path(__file__).parent / "data" / "ab"


def test_parse_fixed_requests():
    text = (DATA / "ab-requests.out").read_text()
    r = parse_ab(text)
    assert r.requests == 300 and len(r.latency_us) == 7 and r.error_count == 0
    assert r.requests_per_second == float(text.split("Requests per second:")[1].split()[0])
    assert r.latency_us["mean"] == pytest.approx(1000 * float(text.split("Time per request:")[1].split()[0]))
    csv = dict(line.split(",") for line in text.splitlines() if line[:1].isdigit() and "," in line)
    assert r.latency_us["p99"] == pytest.approx(float(csv["99"]) * 1000)
    latency = r.latency_us
    assert latency["min"] <= latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]


def test_parse_counts_failure_classes():
    text = (DATA / "ab-timed.out").read_text()
    r = parse_ab(text)
    length = int(text.split("(Connect:")[1].split("Length: ")[1].split(",")[0])
    assert length > 0 and r.errors["length"] == length and r.errors["connect"] == 0 and r.error_count == length
    assert r.duration_us == int(float(text.split("Time taken for tests:")[1].split()[0]) * 1e6)


def test_refused_output_is_no_report():
    with pytest.raises(EdgebenchError, match="Connection refused"):
        parse_ab((DATA / "ab-refused.out").read_text())


def test_command_forms():
    timed = ab_command("http://h:1/io", 10, duration_s=5, cpuset="1")
    assert timed[:3] == ["taskset", "-c", "1"] and timed[timed.index("-t") + 1] == "5"
    assert timed.index("-n") > timed.index("-t")  # -n after -t, else ab caps the run at 50,000 requests
    fixed = ab_command("http://h:1/io", 10, requests=2000)
    assert fixed[fixed.index("-n") + 1] == "2000" and "-t" not in fixed
    for bad in (dict(), dict(requests=5, duration_s=5), dict(requests=5)):
        with pytest.raises(ConfigError):
            ab_command("http://h:1/io", 10, **bad)


@pytest.fixture
def http_server(tmp_path):
    (tmp_path / "index.html").write_text("x" * 612)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: subprocess.run(["sh", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"], executable="/bin/bash",
                                          capture_output=True).returncode == 0, 5, 0.1)
        yield f"http://127.0.0.1:{port}/index.html", port
    finally:
        proc.kill()
        proc.wait()


def test_real_ab_fixed_and_timed(local, http_server):
    need_tool(local, "ab")
    url, port = http_server
    ab = Ab(local)
    fixed = ab.run_requests(url, 50, 2)
    assert fixed.requests == 50 and fixed.error_count == 0 and fixed.bytes > 50 * 612
    timed = ab.run(url, LoadSettings(threads=1, connections=2, duration_s=1))
    assert timed.requests > 0 and 0.9e6 <= timed.duration_us < 3e6


def test_real_ab_names_an_unreachable_server(local):
    need_tool(local, "ab")
    with pytest.raises(EdgebenchError, match="ab on local exited"):
        Ab(local).run_requests(f"http://127.0.0.1:{free_port()}/", 4, 2)


# A server that answers its first ANSWERED connections, then accepts and holds the rest unanswered:
# what nginx on Unikraft 0.16's network stack does under ab's one-connection-per-request load.
STALLING_SERVER = """
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(64)
print("listening", flush=True)
answered, held = 0, []
while True:
    conn, _ = server.accept()
    if answered < int(sys.argv[2]):
        conn.recv(4096)
        conn.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Length: 3\\r\\n\\r\\nok\\n")
        conn.close()
        answered += 1
    else:
        held.append(conn)
"""


@pytest.mark.parametrize("answered", [7, 0])
def test_a_server_that_stalls_gives_timeouts_not_a_failed_run(local, tmp_path, answered):
    """ab exits 119 when no connection moves for its -s timeout, printing only how many it
    completed: the report counts those, and the connections left waiting as timeouts."""
    need_tool(local, "ab")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", STALLING_SERVER, str(port), str(answered)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "listening"
        r = Ab(local).run_requests(f"http://127.0.0.1:{port}/io", 20, 2, timeout_s=1)
    finally:
        proc.kill()
        proc.wait()
    expected = answered
    assert r.requests == expected and r.errors == {"timeout": 2} and r.latency_us == {}
    assert "no connection answered for its 1 s timeout" in r.stopped_early
    assert f"after {expected} requests" in r.stopped_early
    assert r.duration_us >= 1e6 and r.requests_per_second == pytest.approx(expected / (r.duration_us / 1e6))
    assert (r.nothing_answered() is None) == (expected > 2)
