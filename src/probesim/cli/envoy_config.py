"""``probesim envoy-config``: the Envoy configuration Istio would produce for these objects."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from probesim.cli.common import command, write_file
from probesim.errors import InputError


@command("envoy-config")
def envoy_config(
    paths: Annotated[
        list[str], typer.Argument(help="YAML with DestinationRules, VirtualServices (and Services).")
    ],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")] = None,
    bootstrap: Annotated[
        bool,
        typer.Option("--bootstrap", help="A complete static bootstrap (listener and admin on 127.0.0.1)."),
    ] = False,
    endpoint: Annotated[
        list[str] | None,
        typer.Option(help="Endpoints of a service as NAME=HOST:PORT (repeatable), e.g. web=127.0.0.1:8081."),
    ] = None,
    port: Annotated[int, typer.Option(help="Listener port of the bootstrap.", min=1, max=65535)] = 10000,
    admin_port: Annotated[int, typer.Option(help="Admin port of the bootstrap.", min=1, max=65535)] = 9901,
) -> None:
    """Print the Envoy v3 clusters, routes and filters Istio would produce for these objects.

    With --bootstrap, a complete static configuration that `envoy --mode validate -c` accepts.
    """
    import yaml

    from probesim.mesh.envoy import Translator
    from probesim.mesh.load import load_mesh

    eps: dict[str, list[tuple[str, int]]] = {}
    for item in endpoint or []:
        name, _, addr = item.partition("=")
        host, _, num = addr.rpartition(":")
        if not name or not host or not num.isdigit():
            raise InputError(f"--endpoint {item!r}: use NAME=HOST:PORT, e.g. web=127.0.0.1:8081")
        eps.setdefault(name, []).append((host, int(num)))
    rules, vss, objects = load_mesh(paths)
    tr = Translator(rules, vss, objects.services, eps)
    doc = tr.bootstrap(port, admin_port) if bootstrap else tr.config()
    text = yaml.safe_dump(doc, sort_keys=False)
    if output is None:
        sys.stdout.write(text)
    else:
        write_file(output, text)
