"""The ``probesim`` command line: the app and its entry point (cli.program), what commands share
(cli.common), and one module per command, imported here in the order ``--help`` lists them."""

from importlib import import_module

from probesim.cli.program import app, main

# Each registers its command as it is imported: this order is --help's.
COMMANDS = (
    "run",
    "sweep",
    "compare",
    "report",
    "check",
    "diff",
    "tune",
    "fit",
    "envoy_config",
    "app_server",
    "lab",
    "info",
)
for _module in COMMANDS:
    import_module(f"probesim.cli.{_module}")

__all__ = ["app", "main"]
