"""Where things live. Derived from this file, never from the kernel's working directory."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
APPS_DIR = PROJECT_ROOT / "apps"
TOOLS_DIR = PROJECT_ROOT / "tools"
DOCKERFILES_DIR = PROJECT_ROOT / "dockerfiles"
NANOS_CONFIGS_DIR = PROJECT_ROOT / "nanos-configs"
DATA_DIR = PROJECT_ROOT / "data"
REFERENCE_DIR = DATA_DIR / "reference"
FIGURES_DIR = PROJECT_ROOT / "figures"
# Build outputs made on the controlling machine (cross-compiled binaries, docker contexts).
BUILD_DIR = PROJECT_ROOT / ".build"
