"""``probesim app``: the lab's test app, serving a container's behaviour for real."""

from pathlib import Path
from typing import Annotated

import typer

from probesim.cli.common import command
from probesim.errors import InputError


@command("app")
def app_command(
    port: Annotated[
        int, typer.Option(help="Port on 127.0.0.1 (also read from $PORT).", min=1, max=65535, envvar="PORT")
    ],
    behavior: Annotated[
        str,
        typer.Option(
            help="The container behaviour, JSON or YAML (a scenario's behavior.<workload>.containers.<name>)."
        ),
    ] = "{}",
    grpc_port: Annotated[
        int | None,
        typer.Option(
            help="Also serve gRPC health (grpc.health.v1) on this port; it answers as the path 'grpc'.",
            min=1,
            max=65535,
            envvar="GRPC_PORT",
        ),
    ] = None,
    dependency: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME=URL of a dependency its routes call (a route's calls), e.g. "
            "db=http://127.0.0.1:9000/; repeat for more. Only 127.0.0.1."
        ),
    ] = None,
    service: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME=URL of a Service its routes call (a call with 'service: NAME'), e.g. "
            "backend=http://127.0.0.1:9001/ (the lab's kube-proxy for it); repeat for more. Only 127.0.0.1."
        ),
    ] = None,
    cpu_limit: Annotated[
        float | None,
        typer.Option(
            help="The container's CPU limit in cores (e.g. 0.5): the app keeps to it as CFS does, "
            "stopping for the rest of each 100 ms period once it has used its quota.",
            min=0.001,
        ),
    ] = None,
    cpu_stat_dir: Annotated[
        Path | None,
        typer.Option(
            help="With --cpu-limit, write its CFS counts (a cgroup cpu.stat's nr_periods, nr_throttled, "
            "throttled_usec) to DIR/<this process's PID> as each 100 ms period ends, for the lab's "
            "cAdvisor series.",
            file_okay=False,
            exists=True,
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Also serve /metrics on this port: a request-duration histogram per route "
            "(http_server_request_duration_seconds, OpenTelemetry's name), for Prometheus.",
            min=1,
            max=65535,
            envvar="METRICS_PORT",
        ),
    ] = None,
    probe_path: Annotated[
        list[str] | None,
        typer.Option(
            help="A path the container's HTTP probes get, e.g. /healthz; repeat for more. With a worker "
            "pool (capacity.workers) a probe waits for a worker behind the queued requests, unless "
            "capacity.probes is separate; it is never refused for a full queue.",
        ),
    ] = None,
) -> None:
    """Run the lab's test app: an HTTP server on 127.0.0.1 that acts out a container's behaviour
    for real (start delay, hangs, deadlocks, crashes, error windows, costs, worker pool, SIGTERM),
    with gRPC health on --grpc-port.

    Example: [bold]probesim app --port 8081 --behavior '{start: 5s, paths: {/healthz: 200}}'[/bold]
    """
    import yaml
    from pydantic import ValidationError

    from probesim.lab.app import serve
    from probesim.model.scenario import ContainerBehavior

    try:
        data = yaml.safe_load(behavior)
        cb = ContainerBehavior.model_validate(data or {})
    except yaml.YAMLError as e:
        raise InputError(f"--behavior is not valid YAML or JSON: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{first['msg']}", field=f"--behavior {where}") from None
    urls: dict[str, str] = {}
    for item in dependency or []:
        name, _, url = item.partition("=")
        if not name or not url.startswith("http://127.0.0.1:"):
            raise InputError(f"{item!r}: use NAME=http://127.0.0.1:PORT/...", field="--dependency")
        urls[name] = url
    for item in service or []:
        name, _, url = item.partition("=")
        if not name or not url.startswith("http://127.0.0.1:"):
            raise InputError(f"{item!r}: use NAME=http://127.0.0.1:PORT/", field="--service")
        urls[f"service/{name}"] = url
    for path in probe_path or []:
        if not path.startswith("/"):
            raise InputError(f"{path!r}: a path starts with '/'", field="--probe-path")
    serve(cb, port, grpc_port, urls, metrics_port, cpu_limit, cpu_stat_dir, frozenset(probe_path or []))
