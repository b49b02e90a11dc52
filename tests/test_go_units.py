"""The Go programs' own unit tests (apps/iomt, apps/home-automation, tools/probe, tools/steps,
tools/openloop, tools/forward) run with the suite."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import need
from edgebench.paths import APPS_DIR, TOOLS_DIR


@pytest.mark.parametrize("module", [APPS_DIR / "iomt", APPS_DIR / "home-automation", TOOLS_DIR / "probe",
                                    TOOLS_DIR / "steps",
                                    TOOLS_DIR / "openloop", TOOLS_DIR / "forward"],
                         ids=lambda p: p.name)
def test_go_vet_and_tests(module):
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    need("go", None if go else "Go is not installed (the apps are built with it: apt-get install golang-go, "
         "or go.dev/dl)")
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod", CGO_ENABLED="0")
    for args in (["vet", "./..."], ["test", "-count=1", "./..."]):
        r = subprocess.run([go, *args], cwd=module, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"go {' '.join(args)} in {module.name}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
