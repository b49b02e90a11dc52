"""Where things live. Derived from this file, never from the kernel's working directory.
EDGEBENCH_DATA_DIR and EDGEBENCH_FIGURES_DIR move the run outputs elsewhere (tests use it)."""

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
APPS_DIR = PROJECT_ROOT / "apps"
TOOLS_DIR = PROJECT_ROOT / "tools"
DOCKERFILES_DIR = PROJECT_ROOT / "dockerfiles"
NANOS_CONFIGS_DIR = PROJECT_ROOT / "nanos-configs"
# The papers' numbers ship with the project, whatever DATA_DIR is.
REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"
DATA_DIR = Path(os.environ.get("EDGEBENCH_DATA_DIR") or PROJECT_ROOT / "data")
FIGURES_DIR = Path(os.environ.get("EDGEBENCH_FIGURES_DIR") or PROJECT_ROOT / "figures")
# Build outputs made on the controlling machine (cross-compiled binaries).
BUILD_DIR = PROJECT_ROOT / ".build"
