"""Errors a user can act on. Each message says what to change."""


class EdgebenchError(Exception):
    """Base class for every error edgebench raises on purpose."""


class ConfigError(EdgebenchError, ValueError):
    """A parameter is wrong; raised before anything is started."""


class NotMeasurable(EdgebenchError):
    """What this device or runtime cannot measure, nothing having gone wrong: no power meter, no
    NPB binaries, an app's clock inside a VM, a memory limit below what the runtime starts. A
    sweep writes its rows with status `not measurable` and the reason, counted apart from failures."""


class BelowMinimum(ConfigError, NotMeasurable):
    """A memory limit below what a runtime can start anything with: refused before anything runs
    when asked for alone, not measurable as one point of a sweep over memory."""


class MissingTool(ConfigError):
    """A program an experiment runs is not on the host that must run it. `tool` names it, so
    callers (the test suite's need() gate, a sweep) can tell a missing part from a wrong parameter."""

    def __init__(self, tool: str, message: str):
        self.tool = tool
        super().__init__(message)


class TargetUnreachable(EdgebenchError):
    """The device under test cannot be reached (SSH connect, auth or host key)."""


class RemoteCommandError(EdgebenchError):
    """A command on a target failed. Names the host, the command and the tail of stderr."""

    def __init__(self, host: str, command: str, exit_code: int | None, stderr: str, stdout: str = ""):
        self.host, self.command, self.exit_code = host, command, exit_code
        self.stderr, self.stdout = stderr, stdout
        tail = "\n".join(stderr.strip().splitlines()[-8:]) or "(no stderr)"
        what = "timed out" if exit_code is None else f"exited {exit_code}"
        super().__init__(f"on {host}: `{command}` {what}:\n{tail}")
