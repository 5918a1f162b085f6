"""The ``probesim`` command line: the app and its entry point (cli.program), what commands share
(cli.common), and one module per command, imported here in the order ``--help`` lists them."""

from probesim.cli import (  # noqa: F401  (each registers its command)
    app_server,
    check,
    compare,
    envoy_config,
    info,
    lab,
    report,
    run,
    sweep,
    tune,
)
from probesim.cli.program import app, main

__all__ = ["app", "main"]
