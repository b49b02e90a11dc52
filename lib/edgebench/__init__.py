"""edgebench: run the same service natively, in Docker, in a unikernel or a system
container on an edge device, measure it the same way, and compare with the papers."""

from edgebench.errors import ConfigError, EdgebenchError, RemoteCommandError
from edgebench.paths import PROJECT_ROOT

__all__ = ["ConfigError", "EdgebenchError", "RemoteCommandError", "PROJECT_ROOT"]
__version__ = "0.1.0"
