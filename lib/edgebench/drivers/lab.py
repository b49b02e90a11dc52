"""`make lab`: JupyterLab on notebooks/, with the project's virtual environment as the kernel the
notebooks name ("edgebench"), as any user (root too: a Raspberry Pi image, a VM, a container),
on LAB_IP:LAB_PORT, stopped by one Ctrl-C with its kernels shut down.

    python -m edgebench.drivers.lab [--ip 127.0.0.1] [--port 8888]

The default address is loopback: on a remote device, tunnel to it (docs/manual.md, "JupyterLab and coursework")."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from edgebench.errors import ConfigError
from edgebench.experiments import NOTEBOOKS_DIR
from edgebench.waiting import wait_until

KERNEL_NAME = "edgebench"
KERNEL_DISPLAY_NAME = "Python (edgebench)"
READY_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30


def kernel_dir(prefix: str = sys.prefix) -> Path:
    return Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME


def ensure_kernel() -> Path:
    """Register this interpreter (the project's venv) as the "edgebench" kernel, inside the venv
    so that its own Jupyter finds it. Quick and idempotent: rewritten only when it is missing or
    names another interpreter (a venv made anew elsewhere)."""
    spec = kernel_dir() / "kernel.json"
    if spec.is_file() and sys.executable in spec.read_text():
        return spec.parent
    from ipykernel.kernelspec import install
    install(kernel_name=KERNEL_NAME, display_name=KERNEL_DISPLAY_NAME, prefix=sys.prefix)
    return spec.parent


def check_port_free(ip: str, port: int) -> None:
    """Refuse before starting: Jupyter would otherwise pick another port without saying so loudly."""
    with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as s:
        try:
            s.bind((ip, port))
        except OSError as e:
            raise ConfigError(f"cannot listen on {ip}:{port} ({e.strerror}): choose another port, "
                              f"e.g. `make lab LAB_PORT={port + 1}`, or LAB_IP") from None


def lab_argv(ip: str, port: int, open_browser: bool, as_root: bool) -> list[str]:
    argv = [sys.executable, "-m", "jupyterlab", f"--notebook-dir={NOTEBOOKS_DIR}",
            f"--ServerApp.ip={ip}", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--ServerApp.open_browser={open_browser}",
            f"--MultiKernelManager.default_kernel_name={KERNEL_NAME}",
            # kernels over Unix sockets in Jupyter's private runtime folder, as in `make figures`:
            # no other local user reaches them over loopback TCP
            "--KernelManager.transport=ipc"]
    if as_root:
        argv.append("--allow-root")  # JupyterLab refuses root otherwise; a Pi image or container is root
    return argv


def end_with_parent() -> None:
    """In the server's process, before exec: SIGTERM it if this wrapper dies (killed, its terminal
    closed), since its own session keeps it from the terminal's signals. Linux only."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def lab_url(ip: str, port: int, token: str) -> str:
    host = socket.gethostname() if ip in ("0.0.0.0", "::", "") else (f"[{ip}]" if ":" in ip else ip)
    return f"http://{host}:{port}/lab?token={token}"


def wait_ready(ip: str, port: int, token: str, proc: subprocess.Popen) -> None:
    host = "127.0.0.1" if ip in ("0.0.0.0", "") else ("::1" if ip == "::" else ip)
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/api/status?token={token}"

    def answers() -> bool:
        if proc.poll() is not None:
            raise SystemExit(f"JupyterLab exited ({proc.returncode}) before it answered; its output is above")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    if not wait_until(answers, READY_TIMEOUT_S, 0.3):
        raise SystemExit(f"JupyterLab did not answer on {ip}:{port} within {READY_TIMEOUT_S} s")


def stop(proc: subprocess.Popen) -> int:
    """Ask the server to shut down: SIGTERM is its clean stop (kernels shut down, then the
    server), whereas SIGINT without a terminal only breaks its event loop. If it has not
    stopped within STOP_TIMEOUT_S, end it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.terminate()
        return proc.wait(timeout=10)


def stop_as_ctrl_c(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ip", default="127.0.0.1", help="address to listen on (LAB_IP); 0.0.0.0 for every interface")
    ap.add_argument("--port", default="8888", help="port (LAB_PORT)")
    args = ap.parse_args(argv)
    if not args.port.isdigit() or not 0 < int(args.port) < 65536:
        raise SystemExit(f"LAB_PORT={args.port!r} is not a port number: give one such as 8888")
    port = int(args.port)
    try:
        check_port_free(args.ip, port)
    except ConfigError as e:
        raise SystemExit(str(e)) from None
    ensure_kernel()
    token = os.environ.get("JUPYTER_TOKEN") or secrets.token_hex(24)
    open_browser = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    env = dict(os.environ, JUPYTER_TOKEN=token)  # not on the command line, where `ps` shows it
    # Its own session: a terminal's Ctrl-C reaches only this process, which stops the server
    # cleanly and at once (Jupyter's own Ctrl-C asks for a confirmation first).
    proc = subprocess.Popen(lab_argv(args.ip, port, open_browser, os.geteuid() == 0), env=env,
                            start_new_session=True, preexec_fn=end_with_parent)
    # SIGTERM (a service manager, a test's timeout) stops the server as Ctrl-C does.
    signal.signal(signal.SIGTERM, stop_as_ctrl_c)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored (`&`)
    try:
        wait_ready(args.ip, port, token, proc)
        print(f"\nedgebench JupyterLab: {lab_url(args.ip, port, token)}\n"
              f"  kernel: {KERNEL_DISPLAY_NAME} ({sys.executable}); Ctrl-C stops the server and its kernels\n",
              flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # shutting down already; do not cut it short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        code = stop(proc)
        print(f"edgebench JupyterLab stopped (exit {code})", flush=True)
        return 0
    finally:
        if proc.poll() is None:
            stop(proc)

if __name__ == "__main__":
    sys.exit(main())
