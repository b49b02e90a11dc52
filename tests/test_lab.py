"""Integration: `make lab` as a user runs it (as root here), driven through JupyterLab's own REST
and kernel websocket API, as the browser drives it: the notebooks are listed, the project's
kernel runs them, a notebook measures and then replots its newest data with a figure in its
output, an interrupted measuring kernel leaves its run marked interrupted with its rows, and one
Ctrl-C stops the server with its kernels."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
import uuid
from datetime import datetime, timezone

import pytest
from conftest import sigint_default
from edgebench.drivers.lab import KERNEL_NAME
from edgebench.paths import PROJECT_ROOT
from edgebench.results import load_meta, load_results
from edgebench.waiting import wait_until

URL_LINE = re.compile(r"edgebench JupyterLab: (http://\S+?)/lab\?token=(\w+)")
START_TIMEOUT_S = 180
CELL_TIMEOUT_S = 300
STOP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """`make lab` in its own process group (a terminal's Ctrl-C goes to the whole group)."""

    def __init__(self, tmp_path):
        self.port = free_port()
        env = dict(os.environ, EDGEBENCH_DATA_DIR=str(tmp_path / "data"),
                   EDGEBENCH_FIGURES_DIR=str(tmp_path / "figures"),
                   JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),  # no user settings (a password)
                   IPYTHONDIR=str(tmp_path / "ipython"))
        env.pop("DISPLAY", None)
        env.pop("JUPYTER_TOKEN", None)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_PORT={self.port}",
                                      "PROVISION=no"],
                                     cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, preexec_fn=sigint_default, start_new_session=True)
        self.output: list[str] = []
        self.url_found = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.url_found.wait(START_TIMEOUT_S):
            self.ctrl_c()
            pytest.fail(f"no URL from `make lab` within {START_TIMEOUT_S} s:\n{self.log()}")
        self.ready_s = time.monotonic() - self.started

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            m = URL_LINE.search(line)
            if m:
                self.base, self.token = m.group(1), m.group(2)
                self.url_found.set()

    def log(self, tail: int | None = 4000) -> str:
        """What `make lab` printed: its last `tail` characters for a failure message, or all of it
        to look for a line (a kernel interrupted while starting prints a long traceback last)."""
        text = "".join(self.output)
        return text if tail is None else text[-tail:]

    def api(self, method: str, path: str, body: dict | None = None):
        req = urllib.request.Request(f"{self.base}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
        return json.loads(text) if text else None

    def ctrl_c(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        time.sleep(0.2)  # the reader thread takes the last lines
        return code


class Notebook:
    """A notebook opened in a session (what JupyterLab does when a user opens it) and its cells
    run one by one through the kernel's websocket, parameters overridden in a cell injected
    after the `parameters` cell as papermill does."""

    def __init__(self, lab: Lab, name: str):
        import websocket

        self.lab = lab
        self.model = lab.api("GET", f"/api/contents/{name}?content=1")
        session = lab.api("POST", "/api/sessions", {"path": name, "type": "notebook", "name": name,
                                                    "kernel": {"name": KERNEL_NAME}})
        self.kernel = session["kernel"]
        self.session = uuid.uuid4().hex
        ws_url = lab.base.replace("http://", "ws://") + \
            f"/api/kernels/{self.kernel['id']}/channels?session_id={self.session}"
        self.ws = websocket.create_connection(ws_url, header=[f"Authorization: token {lab.token}"],
                                              timeout=CELL_TIMEOUT_S)

    def cells(self, **parameters) -> list[str]:
        out = []
        for cell in self.model["content"]["cells"]:
            if cell["cell_type"] != "code":
                continue
            out.append(cell["source"])
            if "parameters" in cell["metadata"].get("tags", []):
                out.append("\n".join(f"{k} = {v!r}" for k, v in parameters.items()))
        return out

    def execute(self, code: str) -> tuple[dict, list[dict]]:
        """(execute_reply content, iopub messages) of one cell."""
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": self.session,
                       "msg_type": "execute_request", "version": "5.3",
                       "date": datetime.now(timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        reply, outputs, idle = None, [], False
        while reply is None or not idle:
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["channel"] == "shell" and msg["msg_type"] == "execute_reply":
                reply = msg["content"]
            elif msg["channel"] == "iopub":
                if msg["msg_type"] == "status":
                    idle = msg["content"]["execution_state"] == "idle"
                else:
                    outputs.append(msg)
        return reply, outputs

    def run_all(self, **parameters) -> list[dict]:
        outputs = []
        for code in self.cells(**parameters):
            reply, out = self.execute(code)
            outputs += out
            assert reply["status"] == "ok", f"cell failed: {code[:200]}\n{reply}\n{self.lab.log()}"
        return outputs

    def close(self):
        self.ws.close()


def images(outputs: list[dict]) -> list[str]:
    return [m["content"]["data"]["image/png"] for m in outputs
            if m["msg_type"] in ("display_data", "execute_result") and "image/png" in m["content"]["data"]]


def kernel_pids(tmp_path) -> set[int]:
    """The kernels the lab of `tmp_path` started, known by the IPYTHONDIR it gives them: CI shares
    the machine with other runs' kernels (a board's `make figures` started one in this window)."""
    r = subprocess.run(["pgrep", "-f", "ipykernel_launcher"], capture_output=True, text=True)
    marker = f"IPYTHONDIR={tmp_path / 'ipython'}".encode()
    ours = set()
    for pid in map(int, r.stdout.split()):
        try:
            if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                ours.add(pid)
        except OSError:
            continue  # ended meanwhile
    return ours


@pytest.fixture
def lab(tmp_path, cgroups_ready, no_leftovers):
    lab = Lab(tmp_path)
    yield lab
    if lab.proc.poll() is None:
        lab.ctrl_c()
    assert wait_until(lambda: not kernel_pids(tmp_path), STOP_TIMEOUT_S, 0.2), "a kernel outlived `make lab`"


def test_lab_lists_the_notebooks_and_runs_them_with_the_projects_kernel(lab, tmp_path):
    listed = {item["name"] for item in lab.api("GET", "/api/contents")["content"]}
    committed = {p.name for p in (PROJECT_ROOT / "notebooks").glob("*.ipynb")}
    assert committed and committed <= listed
    specs = lab.api("GET", "/api/kernelspecs")
    assert specs["default"] == KERNEL_NAME and KERNEL_NAME in specs["kernelspecs"]
    assert ".venv" in specs["kernelspecs"][KERNEL_NAME]["spec"]["argv"][0]

    nb = Notebook(lab, "01_static_footprint.ipynb")
    try:
        params = dict(runtimes="native", apps="go-http", profile="quick")
        measured = nb.run_all(run_id="", **params)
        runs = sorted((tmp_path / "data" / "static_footprint").iterdir())
        assert len(runs) == 1 and load_meta(runs[0])["status"] == "completed"
        assert images(measured), "the measuring run showed no figure"

        started = time.monotonic()
        replotted = nb.run_all(run_id="latest", **params)
        replot_s = time.monotonic() - started
    finally:
        nb.close()
    assert sorted((tmp_path / "data" / "static_footprint").iterdir()) == runs, "replotting measured again"
    assert images(replotted), "no figure in the replotted notebook's output"
    assert (tmp_path / "figures" / "static_footprint").is_dir()
    print(f"make lab to URL: {lab.ready_s:.1f} s; replot through the server: {replot_s:.1f} s; "
          f"make lab to a replotted figure: {time.monotonic() - lab.started:.1f} s")


def test_interrupting_a_measuring_kernel_keeps_its_rows_and_leaves_nothing_running(lab, tmp_path):
    nb = Notebook(lab, "02_time_to_ready.ipynb")
    runs_dir = tmp_path / "data" / "time_to_ready"
    try:
        cells = nb.cells(run_id="", runtimes="native", apps="go-http", profile="quick", repetitions=50,
                         protocols="fair", cpus="1", memory="64m")
        measuring = next(i for i, c in enumerate(cells) if "collect(" in c)
        for code in cells[:measuring]:
            assert nb.execute(code)[0]["status"] == "ok"

        result = {}
        worker = threading.Thread(target=lambda: result.update(zip(("reply", "out"), nb.execute(cells[measuring]))))
        worker.start()

        def two_rows() -> bool:
            results = list(runs_dir.glob("*/results.csv"))
            if results and len(results[0].read_text().splitlines()) >= 3:  # header and two rows
                return True
            assert worker.is_alive(), f"the measurement ended before it was interrupted: {result}"
            return False

        if not wait_until(two_rows, CELL_TIMEOUT_S, 0.1):
            pytest.fail(f"no rows within {CELL_TIMEOUT_S} s\n{lab.log()}")
        lab.api("POST", f"/api/kernels/{nb.kernel['id']}/interrupt")  # the toolbar's stop button
        worker.join(CELL_TIMEOUT_S)
        assert not worker.is_alive(), "the kernel did not stop measuring after the interrupt"
    finally:
        nb.close()

    reply, out = result["reply"], result["out"]
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    stderr = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
    assert re.search(r"\d+%\|", stderr), f"no progress bar in the notebook's output: {stderr[-500:]}"
    (run_dir,) = [p.parent for p in runs_dir.glob("*/results.csv")]
    meta = load_meta(run_dir)
    assert meta["status"] == "interrupted", meta
    rows = load_results(run_dir)
    assert 2 <= len(rows) < 50, "rows kept, and fewer than a full run"


def test_ctrl_c_stops_make_lab_and_its_kernels(lab, tmp_path):
    kernel = lab.api("POST", "/api/kernels", {"name": KERNEL_NAME})
    assert wait_until(lambda: kernel_pids(tmp_path), 30, 0.2), "the started kernel is not running"
    started = time.monotonic()
    code = lab.ctrl_c()
    # make ends itself with the SIGINT it got, as a shell expects (-2); what it ran stopped cleanly.
    assert code in (0, -signal.SIGINT), f"make lab exited {code} on Ctrl-C:\n{lab.log()}"
    printed = lab.log(tail=None)
    assert "edgebench JupyterLab stopped (exit 0)" in printed, lab.log()
    assert "Shutting down" in printed and "kernel" in printed.lower(), lab.log()
    with pytest.raises(OSError):
        lab.api("GET", "/api/status")
    print(f"Ctrl-C to stopped: {time.monotonic() - started:.1f} s (kernel {kernel['id']})")


@pytest.mark.parametrize("port, words", [("abc", ["LAB_PORT='abc'", "8888"]),
                                         ("busy", ["already in use", "LAB_PORT="])])
def test_a_bad_or_busy_port_is_refused_before_jupyter_starts(port, words):
    import sys
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        if port == "busy":
            port = str(held.getsockname()[1])
        r = subprocess.run([sys.executable, "-m", "edgebench.drivers.lab", "--port", port], cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    for word in words:
        assert word in r.stderr, r.stderr
    assert "ServerApp" not in r.stderr + r.stdout  # refused before JupyterLab was started
