"""The shell scripts the library sends to a device, kept as .sh files beside this one so that
shellcheck reads them (tests/test_shell_scripts.py) and a reader sees shell, not shell escaped
inside Python strings. They ship as package data (pyproject.toml).

A script is sent as it always was: its text is the argument of one `sh -c` on the target, run
by the Target (a local shell, or one SSH command: one round trip), with its arguments in a
`set --` line in front of it (`with_args`). Nothing is copied to the device first.

A module loads its scripts when it is imported (`shell_script("name.sh")` with the name written
out), so a renamed file fails the import and the test that looks for every name, not a run on a
device.
"""

from __future__ import annotations

import shlex
from importlib.resources import files


def shell_script(name: str) -> str:
    """The text of the script `name` in this package; FileNotFoundError if it is not there."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def with_args(script: str, *args: object) -> str:
    """The script with its positional parameters set, each quoted: `set -- 'a' 'b'` then the text."""
    return f"set -- {shlex.join(str(a) for a in args)}\n{script}"


__all__ = ["shell_script", "with_args"]
