"""App profiles: each catalog family resolved from a realistic image reference (and never from a
neighbour's image: an exporter, an operator), from a manifest's own hints, corrected by the user;
and the advice that follows from them — the app's own endpoints in fixes, no finding where nothing
listens or where the app already splits its endpoints, liveness more tolerant than readiness, and
fixes that never break a principle of the probe policy that the original kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probesim.analysis.check import check, load_config
from probesim.analysis.context import Context
from probesim.analysis.policy import PRINCIPLES, broken
from probesim.analysis.rules.timing import Timing, probes_of
from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.discovery import read_manifests
from probesim.manifests.yamlsrc import load_docs
from probesim.profiles import ProfileCorrection, catalog, resolve
from probesim.report.check_outputs import to_json, to_sarif
from tests.analysis.realworld_expected import EXPECTED
from tests.analysis.test_fixes import REALWORLD, _findings, _one, _patched, _recheck, skip_realworld

IMAGES = [
    ("ghcr.io/spring-projects/spring-petclinic:3.2.0", "spring-boot"),
    ("quay.io/quarkus/quarkus-quickstart:1.0", "quarkus"),
    ("docker.io/acme/micronaut-orders:2.1", "micronaut"),
    ("quay.io/keycloak/keycloak:24.0.1", "keycloak"),
    ("mcr.microsoft.com/dotnet/aspnet:8.0", "aspnet-core"),
    ("node:20-alpine", "node"),
    ("gcr.io/distroless/static-debian12:nonroot", "go"),
    ("python:3.12-slim", "python-web"),
    ("ruby:3.3", "ruby-puma"),
    ("nginx:1.25.3", "nginx"),
    ("nginxinc/nginx-unprivileged:1.25", "nginx"),
    ("registry.k8s.io/ingress-nginx/controller:v1.10.0@sha256:42b3f0e5d0846876b1791cd3afeb5f1cbbe4259d6f35651dcc1b5c980925379c", "ingress-nginx"),
    ("envoyproxy/envoy:v1.30.1", "envoy"),
    ("haproxy:2.9", "haproxy"),
    ("traefik:v3.0", "traefik"),
    ("quay.io/prometheus/prometheus:v2.51.0", "prometheus"),
    ("quay.io/prometheus/alertmanager:v0.27.0", "alertmanager"),
    ("quay.io/thanos/thanos:v0.34.1", "thanos"),
    ("grafana/loki:2.9.4", "loki"),
    ("grafana/grafana:10.4.0", "grafana"),
    ("postgres:16.2", "postgres"),
    ("ghcr.io/cloudnative-pg/postgresql:16.2", "postgres"),
    ("docker.io/bitnami/postgresql:16.2.0-debian-12-r5", "postgres"),
    ("mysql:8.0.36", "mysql"),
    ("mariadb:11.3", "mysql"),
    ("redis:7.2-alpine", "redis"),
    ("valkey/valkey:8.0", "redis"),
    ("mongo:7.0", "mongodb"),
    ("rabbitmq:3.13-management", "rabbitmq"),
    ("mcr.microsoft.com/azurelinux/base/rabbitmq-server:3.13", "rabbitmq"),  # the expert review's
    ("confluentinc/cp-kafka:7.6.0", "kafka"),
    ("quay.io/strimzi/kafka:0.40.0-kafka-3.7.0", "kafka"),
    ("zookeeper:3.9", "zookeeper"),
    ("docker.elastic.co/elasticsearch/elasticsearch:8.13.0", "elasticsearch"),
    ("opensearchproject/opensearch:2.12.0", "elasticsearch"),
    ("quay.io/minio/minio:RELEASE.2024-03-15T01-07-19Z", "minio"),
    ("nats:2.10-alpine", "nats"),
    ("registry.k8s.io/etcd:3.5.12-0", "etcd"),
    ("cockroachdb/cockroach:v24.1.3", "cockroachdb"),
    ("gcr.io/google-samples/cassandra:v14", "cassandra"),
    ("bitnami/cassandra:4.1.4", "cassandra"),
    ("registry.k8s.io/coredns/coredns:v1.11.1", "coredns"),
    # Neighbours of a family are not the family: its exporter, its operator, its reloader.
    ("quay.io/prometheuscommunity/postgres-exporter:v0.15.0", "generic"),
    ("oliver006/redis_exporter:v1.58.0", "generic"),
    ("quay.io/prometheus-operator/prometheus-operator:v0.72.0", "generic"),
    ("quay.io/prometheus-operator/prometheus-config-reloader:v0.72.0", "generic"),
    ("mysql/mysql-router:8.0", "generic"),
    ("cockroachdb/cockroach-k8s-init:0.2", "generic"),
    ("criteord/cassandra_exporter:2.3.8", "generic"),
    ("acme/orders:1.4.2", "generic"),
]  # fmt: skip


@pytest.mark.parametrize(("image", "family"), IMAGES)
def test_a_profile_is_resolved_from_a_realistic_image_reference(image: str, family: str) -> None:
    r = resolve("w", "c", {"image": image})
    assert r.profile.id == family
    release = ("release 3.5.12-0: /livez, /readyz (from 3.5.11)",) if family == "etcd" else ()
    assert r.evidence == ((f"image {image}", *release) if family != "generic" else ())


def test_every_catalog_family_is_resolved_from_an_image_and_says_its_sources() -> None:
    assert {f for _, f in IMAGES} == set(catalog())
    for p in catalog().values():
        assert {"endpoints", "start", "pause"} <= set(p.sources), p.id
        assert p.start.typical <= p.start.worst


def test_the_manifest_itself_is_evidence_probe_paths_env_and_command() -> None:
    raw = {
        "image": "acme/orders:1",
        "livenessProbe": {"httpGet": {"path": "/actuator/health/liveness", "port": "mgmt"}},
        "env": [{"name": "MANAGEMENT_SERVER_PORT", "value": "8081"}],
    }
    r = resolve("w", "c", raw)
    assert (r.profile.id, r.profile.health_port) == ("spring-boot", 8081)
    assert r.evidence == ("probe path /actuator/health/liveness", "env MANAGEMENT_SERVER_PORT=8081")
    assert (
        resolve("w", "c", {"image": "acme/a:1", "env": [{"name": "QUARKUS_PROFILE"}]}).profile.id == "quarkus"
    )
    cmd = {"image": "acme/api:1", "command": ["/usr/local/bin/gunicorn", "app:app"]}
    assert resolve("w", "c", cmd).evidence == ("command gunicorn",)
    # A scenario's start is the start; the catalog's range is not.
    r = resolve("w", "c", {"image": "postgres:16"}, scenario_start_ms=45_000)
    assert (r.start_ms, r.from_scenario) == ((45_000, 45_000), True)
    assert r.line() == "PostgreSQL (image postgres:16): starts in 45s, pauses up to 1s"


# What a container runs: its command (the image's ENTRYPOINT replaced) then its args (CMD
# replaced), as the Kubernetes docs' "Define a Command and Arguments for a Container" table says;
# `sh -c STRING` runs STRING as a script (POSIX sh, -c: "Read commands from the command_string
# operand"), whose comments run nothing.
COMMANDS = [
    ({"command": ["node", "server.js"]}, "command node"),
    ({"command": ["sh", "-c", "exec node index.js"]}, "command node"),
    ({"command": ["/bin/sh", "-c", "npm start"]}, "command npm"),
    ({"command": ["/bin/sh", "-c"], "args": ["npm start"]}, "command npm"),
    ({"command": ["python", "-m", "gunicorn", "app:app"]}, "command gunicorn"),
    ({"command": ["python3", "manage.py", "runserver"]}, "command manage.py"),
    ({"args": ["gunicorn", "--bind", "0.0.0.0:8000", "app:app"]}, "command gunicorn"),
    ({"command": ["tini", "--", "gosu", "redis", "redis-server", "--port", "6379"]}, "command redis-server"),
    ({"command": ["docker-entrypoint.sh", "postgres"]}, "command postgres"),
    ({"command": ["bash", "-ecx", "FOO=1 BAR=2 gunicorn app:app && echo done"]}, "command gunicorn"),
    ({"command": ["sh", "-c", "if [ -f /x ]; then exec mongod --bind_ip_all; fi"]}, "command mongod"),
    ({"command": ["sh", "-c", 'echo "#1; a node"; exec "/usr/local/bin/node" app.js']}, "command node"),
    ({"command": ["sh", "-c", "cat <<EOF > /etc/app.conf\nnode = primary\nEOF\nexec gunicorn app:app"]},
     "command gunicorn"),
    # A comment, an argument, an option's value or a string is not what runs.
    ({"command": ["sh", "-c", "# start the node\nexec /app/run"]}, None),
    ({"command": ["bash", "-c", "exec /app/run  # like node does"]}, None),
    ({"command": ["/app/run", "--mode", "node"]}, None),
    ({"args": ["--config", "/etc/nginx.conf"]}, None),
    ({"command": ["java", "-jar", "app.jar"]}, None),
    ({"command": ["sh", "-c", "ARGS=(node gunicorn)\nexec /app/run ${ARGS[*]}"]}, None),
    ({"command": ["sh", "/entrypoint-for-node.sh"]}, None),
    ({"command": ["sh", "-c", "echo 'starting,\nnode by node'\nexec /app/run"]}, None),
    ({"command": ["sh", "-c", "cat <<-'END'\n\tnode\n\tEND\nexec /app/run"]}, None),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "evidence"), COMMANDS)
def test_the_command_evidence_is_the_program_it_runs(raw: dict[str, object], evidence: str | None) -> None:
    r = resolve("w", "c", {"image": "acme/app:1", **raw})
    assert r.evidence == ((evidence,) if evidence else ())
    assert (r.profile.id == "generic") == (evidence is None)


@skip_realworld
def test_the_cockroachdb_start_script_is_not_read_as_node_for_its_comments() -> None:
    """k8s-examples' CockroachDB StatefulSet starts with `/bin/bash -ecx SCRIPT` whose comments say
    "we're the first node": it ran `exec /cockroach/cockroach ...` and was taken for Node.js."""
    path = REALWORLD / "k8s-examples" / "_archived_cockroachdb_cockroachdb-statefulset.yaml"
    (sts,) = [d.data for d in load_docs(path.read_text(), str(path)) if d.data.get("kind") == "StatefulSet"]
    container = dict(sts["spec"]["template"]["spec"]["containers"][0])
    assert container["command"][:2] == ["/bin/bash", "-ecx"] and "first node" in container["command"][2]
    r = resolve("w", "c", {**container, "image": "acme/db:1"})
    assert (r.profile.id, r.evidence) == ("cockroachdb", ("command cockroach",))
    r = resolve("w", "c", container)
    assert (r.profile.id, r.evidence) == ("cockroachdb", ("image cockroachdb/cockroach:v1.1.0",))


@skip_realworld
def test_cockroachdb_gets_its_own_readiness_endpoint_and_quorum_advice() -> None:
    """Cockroach Labs' StatefulSet (cloud/kubernetes/cockroachdb-statefulset.yaml) probes readiness
    on /health?ready=1 at its http port, 8080; ranges are Raft groups (a majority of 3 replicas)."""
    docs, _ = read_manifests(
        [str(REALWORLD / "k8s-examples" / "_archived_cockroachdb_cockroachdb-statefulset.yaml")]
    )
    by_rule = {f.rule.id: f for f in _findings(docs)}
    assert sorted(by_rule) == ["PS001", "PS035", "PS037"]
    ps001 = by_rule["PS001"]
    assert ps001.patch is not None
    probe = ps001.patch["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    assert probe["httpGet"] == {"path": "/health?ready=1", "port": 8080}
    assert "CockroachDB's own readiness endpoint" in ps001.remediation
    assert "a quorum system, of 3 members 2 must be up" in by_rule["PS035"].message
    assert by_rule["PS037"].patch is not None
    assert "requiredDuringSchedulingIgnoredDuringExecution" in json.dumps(by_rule["PS037"].patch)
    assert "PS001" not in {f.rule.id for f in _findings(_patched(docs, ps001))}  # the fix re-checks clean


def test_cassandra_is_a_slow_starting_quorum_store_known_by_its_image_or_env() -> None:
    r = resolve("w", "c", {"image": "gcr.io/google-samples/cassandra:v14"})
    assert (r.profile.protocol, r.profile.membership, r.profile.slow_start, r.start_ms) == (
        "cql",
        "quorum",
        True,
        (30_000, 300_000),
    )
    assert r.handler("readiness", 9042) == {"tcpSocket": {"port": 9042}}
    r = resolve(
        "w", "c", {"image": "acme/store:1", "env": [{"name": "CASSANDRA_CLUSTER_NAME", "value": "K8Demo"}]}
    )
    assert (r.profile.id, r.evidence) == ("cassandra", ("env CASSANDRA_CLUSTER_NAME",))


def test_a_user_corrects_a_profile_in_one_place() -> None:
    corrections = (
        ProfileCorrection.model_validate({"workload": "orders", "profile": "spring-boot", "pause": "4s"}),
        ProfileCorrection.model_validate({"image": "acme/", "readiness": {"httpGet": {"path": "/ready"}}}),
    )
    r = resolve("orders", "app", {"image": "acme/orders:1"}, corrections)
    assert (r.profile.id, r.pause_ms, r.corrected) == ("spring-boot", 4000, True)
    assert r.evidence == (".probesim.yaml names spring-boot",)
    # the first correction that matches wins; another workload gets the second
    r = resolve("billing", "app", {"image": "acme/billing:1"}, corrections)
    assert (r.profile.id, r.handler("readiness", 80)) == ("generic", {"httpGet": {"path": "/ready"}})
    assert r.evidence == (".probesim.yaml corrects readiness",)


def test_an_unknown_profile_in_the_config_is_an_error_naming_its_line(tmp_path: Path) -> None:
    cfg = tmp_path / ".probesim.yaml"
    cfg.write_text("profiles:\n- workload: web\n  profile: springboot\n")
    with pytest.raises(InputError) as e:
        load_config(str(cfg))
    assert e.value.line == 3 and e.value.field == "profiles[0].profile"
    assert "unknown profile 'springboot'; known: spring-boot," in str(e.value)


def _deploy(
    image: str, container: str, service_ports: str = "[{port: 80, targetPort: http}]", extra: str = ""
) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: app
        image: {image}
{container}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: {service_ports}
{extra}"""


SPRING = """\
        ports: [{name: http, containerPort: 8080}]
        livenessProbe: {httpGet: {path: /actuator/health/liveness, port: http}, periodSeconds: 10}"""


def test_spring_boot_gets_its_readiness_group_and_the_fix_rechecks_clean() -> None:
    text = _deploy("registry.acme.io/orders:3.1", SPRING)
    [f] = [f for f in _one(text) if f.rule.id == "PS001"]
    assert f.patch is not None
    probe = f.patch["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    assert probe["httpGet"] == {
        "path": "/actuator/health/readiness",
        "port": "http",
    }  # not the liveness group
    assert "Spring Boot's own readiness endpoint" in f.remediation
    assert f.assumed is not None and f.assumed.evidence == ("probe path /actuator/health/liveness",)
    docs = list(load_docs(text, "x.yaml"))
    assert _recheck(docs) >= 1
    after = _findings(_patched(docs, f))
    assert [g.rule.id for g in after if g.rule.id == "PS006"] == []


def test_spring_boot_liveness_on_the_aggregate_health_is_pointed_at_its_liveness_group() -> None:
    both = """\
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /actuator/health, port: http}, periodSeconds: 10}
        livenessProbe: {httpGet: {path: /actuator/health, port: http}, periodSeconds: 10, failureThreshold: 5}"""
    text = _deploy("ghcr.io/acme/spring-orders:1", both)
    found = {f.rule.id: f for f in _one(text)}
    # PS016, not PS006 besides it: the profile knows the path checks the database; PS013:
    # liveness gives a start 50 s, Spring Boot's slowest start in its profile is 90 s; and PS046:
    # liveness's default 1 s timeout ends within the 2 s GC pauses of the profile
    assert sorted(found) == ["PS013", "PS016", "PS046"]
    f = found["PS016"]
    assert f.severity == "error"
    assert f.message == (
        "livenessProbe /actuator/health: Spring Boot's /actuator/health also checks its dependencies (a database)"
    )
    assert f.patch == {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "livenessProbe": {"httpGet": {"path": "/actuator/health/liveness"}}}]}}}}  # fmt: skip
    assert found["PS013"].message == "liveness acts after 50s; Spring Boot can need 1m30s to start"
    assert found["PS013"].remediation.startswith(
        "add startupProbe: {httpGet: {path: /actuator/health/liveness, port: http}, periodSeconds: 10, "
        "timeoutSeconds: 3, failureThreshold: 14}"  # 1.5 × 90 s, at its period; liveness's timeout (PS046)
    )
    assert _recheck(list(load_docs(text, "x.yaml"))) == 4  # and PS037's and PS046's fixes
    # Grafana's /api/health reports its database too, but Grafana has no other endpoint to point
    # liveness at: the info finding that the path may check a dependency, no error.
    grafana = both.replace("/actuator/health", "/api/health")
    found = {f.rule.id: f for f in _one(_deploy("grafana/grafana:10.4.0", grafana))}
    assert "PS016" not in found and found["PS006"].severity == "info"
    assert "Grafana's /api/health checks a dependency" in found["PS006"].message


def test_prometheus_probing_its_own_endpoints_is_not_told_it_checks_a_dependency() -> None:
    prom = """\
        ports: [{name: web, containerPort: 9090}]
        readinessProbe: {httpGet: {path: /-/ready, port: web}, periodSeconds: 5}
        livenessProbe: {httpGet: {path: /-/ready, port: web}, periodSeconds: 10, failureThreshold: 5}"""
    svc = "[{port: 9090, targetPort: web}]"
    found = _one(_deploy("quay.io/prometheus/prometheus:v2.51.0", prom, svc))
    # no PS006; PS013 instead: the WAL replay of its profile outlasts the 50 s liveness allows,
    # and the startup probe the fix adds is on Prometheus' own startup check, for 15 minutes
    [f] = found
    assert f.rule.id == "PS013" and f.message == "liveness acts after 50s; Prometheus can need 10m to start"
    assert f.remediation.startswith(
        "add startupProbe: {httpGet: {path: /-/ready, port: web}, periodSeconds: 10, timeoutSeconds: 1, "
        "failureThreshold: 90}"
    )
    # the same probes on a path probesim does not know: it may check a dependency
    unknown = prom.replace("/-/ready", "/status")
    assert [f.rule.id for f in _one(_deploy("acme/tsdb:1", unknown, svc))] == ["PS006"]
    # Prometheus' own paths are evidence too, whatever the image is called
    assert [f.rule.id for f in _one(_deploy("acme/tsdb:1", prom, svc))] == ["PS013"]


NO_PORT = """\
        command: [run-db]"""


def test_a_headless_service_with_no_declared_port_asks_for_no_readiness() -> None:
    headless = _deploy("acme/db:1", NO_PORT, "[{port: 5432}]").replace("spec:\n  selector: {app: web}",
                                                                       "spec:\n  clusterIP: None\n  selector: {app: web}")  # fmt: skip
    assert "clusterIP: None" in headless
    assert [f.rule.id for f in _one(headless)] == []
    # behind a proxied Service the same port does get traffic: readiness is asked for
    assert [f.rule.id for f in _one(_deploy("acme/db:1", NO_PORT, "[{port: 5432}]"))] == ["PS001"]


def test_a_metrics_only_service_asks_for_no_readiness_and_no_liveness_change() -> None:
    exporter = """\
        ports: [{name: metrics, containerPort: 9187}]
        livenessProbe: {httpGet: {path: /, port: metrics}, failureThreshold: 1}"""
    found = _one(
        _deploy("acme/app-exporter:1", exporter, "[{name: metrics, port: 9187, targetPort: metrics}]")
    )
    assert [f.rule.id for f in found] == ["PS010"]  # the liveness kill on one failure, nothing else
    served = _one(
        _deploy("acme/app:1", exporter.replace("metrics", "http"), "[{port: 80, targetPort: http}]")
    )
    assert sorted(f.rule.id for f in served) == ["PS001", "PS010"]


def test_two_fixes_never_leave_liveness_as_strict_as_readiness() -> None:
    # Readiness and liveness on two checks, both far past the 60 s detection target: fitted
    # alone each would take the same 56 s budget (4 × 14 s); liveness must stay the more tolerant.
    probes = """\
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 14, timeoutSeconds: 4, failureThreshold: 10}
        livenessProbe: {httpGet: {path: /live, port: http}, periodSeconds: 14, timeoutSeconds: 4, failureThreshold: 10}"""
    text = (
        _deploy("acme/web:1", probes)
        .replace("kind: Deployment", "kind: StatefulSet")
        .replace("  replicas: 3\n", "  replicas: 3\n  serviceName: web\n")
    )
    findings = _one(text)
    assert {f.rule.id for f in findings} == {"PS014", "PS019"}
    docs = list(load_docs(text, "x.yaml"))
    for f in findings:
        patched = _patched(docs, f)
        ctx = Context(k8s.parse(patched))
        [t] = ctx.targets
        timings = {k: Timing.of(p) for k, p in probes_of(t)}
        assert timings["liveness"].budget > timings["readiness"].budget, f.remediation
        assert "liveness-more-tolerant" not in broken(timings, True, t.profile)
    assert _recheck(docs) == 3  # and PS037's fix


def test_findings_carry_what_they_assumed_in_json_sarif_and_text(tmp_path: Path) -> None:
    # One replica: the disruption rules have nothing to say of it, the one finding is the probe's.
    (tmp_path / "m.yaml").write_text(
        _deploy("redis:7.2", "        ports: [{name: http, containerPort: 6379}]").replace(
            "replicas: 3", "replicas: 1"
        )
    )
    report = check([str(tmp_path / "m.yaml")])
    [f] = report.findings
    doc = json.loads(json.dumps(to_json(report)))
    assert doc["findings"][0]["assumed"] == {
        "profile": "redis",
        "name": "Redis / Valkey",
        "evidence": ["image redis:7.2"],
        "protocol": "redis",
        "endpoints": {
            "liveness": {"exec": {"command": ["redis-cli", "-p", "{port}", "ping"]}},
            "readiness": {"exec": {"command": ["sh", "-c", "redis-cli -p {port} ping | grep -q PONG"]}},
        },
        "start": {"typical": "1s", "worst": "30s"},
        "pause": "1s",
        "corrected": False,
    }
    sarif = to_sarif(report)
    assert sarif["runs"][0]["results"][0]["properties"]["assumed"]["profile"] == "redis"
    assert f.assumed is not None
    assert (
        f.assumed.line() == "Redis / Valkey (image redis:7.2): starts in 1s (30s at worst), pauses up to 1s"
    )


@skip_realworld
@pytest.mark.parametrize("project", sorted(EXPECTED))
def test_no_realworld_fix_breaks_a_principle_the_original_kept(project: str) -> None:
    docs, _ = read_manifests([str(REALWORLD / project)])

    def principles(objects_docs: list, key: str, container: str) -> set[str]:  # type: ignore[type-arg]
        ctx = Context(k8s.parse(objects_docs))
        [t] = [t for t in ctx.targets if f"{t.workload.kind}/{t.namespace}/{t.workload.name}" == key
               and t.container.name == container and t.doc.file == f.file]  # fmt: skip
        live = t.container.liveness_probe
        path = live.http_get.path if live is not None and live.http_get is not None else None
        return broken({k: Timing.of(p) for k, p in probes_of(t)}, bool(t.serves), t.profile, path)

    for f in _findings(docs):
        if f.patch is None or f.patch_type != "strategic" or not f.container:
            continue
        before = principles(docs, f.key, f.container)
        after = principles(_patched(docs, f), f.key, f.container)
        assert after <= before, f"{f.rule.id} on {f.key}: {f.remediation} breaks {after - before}"
        assert after <= set(PRINCIPLES)


def test_a_timeout_at_its_period_is_cured_by_the_timeout_not_an_odd_period() -> None:
    probe = """\
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 10, timeoutSeconds: 10}"""
    [f] = _one(_deploy("acme/web:1", probe))
    assert f.rule.id == "PS011"
    assert f.remediation.startswith("readinessProbe.timeoutSeconds: 9 (")  # never periodSeconds: 11
    # an exec check needs its process start: its period goes up, to a round value
    exec_probe = probe.replace("httpGet: {path: /ready, port: http}", "exec: {command: [check]}").replace(
        "periodSeconds: 10, timeoutSeconds: 10", "periodSeconds: 5, timeoutSeconds: 5"
    )
    [f] = [f for f in _one(_deploy("acme/web:1", exec_probe)) if f.rule.id == "PS011"]
    assert f.remediation.startswith("readinessProbe.periodSeconds: 10 (")


def test_a_long_liveness_delay_becomes_a_startup_probe_that_allows_no_less() -> None:
    delayed = """\
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: http}}
        livenessProbe: {httpGet: {path: /live, port: http}, initialDelaySeconds: 30, failureThreshold: 4}"""
    text = _deploy("acme/web:1", delayed)
    [f] = _one(text)
    assert (f.rule.id, f.severity) == ("PS033", "info")
    assert f.message == "livenessProbe waits 30s before it runs, with no startupProbe"
    # the startup probe allows what liveness allowed before (30 + 4 × 10 s), liveness then runs at once
    assert f.remediation == (
        "add startupProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10, timeoutSeconds: 1, "
        "failureThreshold: 7}, livenessProbe.initialDelaySeconds: 0 (startup allows 70s, readiness takes a "
        "failing pod out within 31s, liveness acts on a hang within 41s)"
    )
    assert _recheck(list(load_docs(text, "x.yaml"))) == 2  # and PS037's fix
    # with a startup probe already there, or a delay of 10 s, nothing to say
    started = delayed + "\n        startupProbe: {httpGet: {path: /live, port: http}, failureThreshold: 30}"
    assert _one(_deploy("acme/web:1", started)) == []
    assert (
        _one(_deploy("acme/web:1", delayed.replace("initialDelaySeconds: 30", "initialDelaySeconds: 10")))
        == []
    )


def test_a_contested_principle_says_which_way_the_finding_goes(tmp_path: Path) -> None:
    # Readiness on a dependency every replica shares: the sources disagree; the fix says so and
    # which way probesim goes, and why.
    from probesim.manifests.scenario import scenario_from_text
    from tests.analysis.test_rules import GOOD, SCENARIO, deployment

    manifest = deployment(GOOD)
    (tmp_path / "m.yaml").write_text(manifest)
    sc = scenario_from_text(SCENARIO.format(start="1s", attempts=1) + "---\n" + manifest, "s.yaml", tmp_path)
    [f] = [f for f in check([str(tmp_path / "m.yaml")], sc).findings if f.rule.id == "PS017"]
    assert f.remediation.startswith("Keep readiness to pod-local state; degrade the dependent routes instead")
    assert "(the guidance is contested: " in f.remediation
    assert "probesim sides with pod-local readiness" in f.remediation


@pytest.mark.parametrize(
    ("image", "ports", "service_ports", "probe", "fixed"),
    [
        # A gRPC port (the Service's appProtocol): the kubelet's grpc probe on its number.
        ("mcr.microsoft.com/dotnet/aspnet:8.0", "[{name: rpc, containerPort: 5001}]",
         "[{port: 5001, targetPort: rpc, appProtocol: grpc}]", "{tcpSocket: {port: rpc}, periodSeconds: 10}",
         {"grpc": {"port": 5001}, "tcpSocket": None}),
        # An HTTP port of an app whose profile knows its liveness endpoint: an httpGet on it.
        ("ghcr.io/acme/spring-orders:1", "[{name: http, containerPort: 8080}]", "[{port: 80, targetPort: http}]",
         "{tcpSocket: {port: http}, periodSeconds: 10}",
         {"httpGet": {"path": "/actuator/health/liveness", "port": "http"}, "tcpSocket": None}),
        # An HTTP port of an app probesim does not know: said, no path guessed.
        ("ghcr.io/acme/web:1", "[{name: http, containerPort: 8080}]", "[{port: 80, targetPort: http}]",
         "{tcpSocket: {port: http}, periodSeconds: 10}", None),
        # A database's own protocol: a TCP check is what fits it.
        ("mysql:8.0", "[{name: mysql, containerPort: 3306}]", "[{port: 3306, targetPort: mysql}]",
         "{tcpSocket: {port: mysql}, periodSeconds: 10}", "none"),
    ],
)  # fmt: skip
def test_a_tcp_probe_on_a_port_that_speaks_grpc_or_http_is_pointed_at_the_app_health(
    image: str, ports: str, service_ports: str, probe: str, fixed: object
) -> None:
    container = f"        ports: {ports}\n        livenessProbe: {probe}\n        readinessProbe: {probe}"
    text = _deploy(image, container, service_ports)
    found = sorted((f for f in _one(text) if f.rule.id == "PS034"), key=lambda f: f.field)
    if fixed == "none":
        assert found == []
        return
    assert [f.field.rsplit(".", 2)[-2] for f in found] == ["livenessProbe", "readinessProbe"]
    live = found[0]
    assert live.severity == "info" and "a hung app still accepts it" in live.message
    if fixed is None:
        assert live.patch is None and "grpc.health.v1" in live.remediation
        return
    assert live.patch is not None
    # Both probes at once (they shared one check, and PS003/PS005 judge them as before).
    assert live.patch == found[1].patch
    assert live.patch["spec"]["template"]["spec"]["containers"][0]["livenessProbe"] == fixed
    docs = list(load_docs(text, "x.yaml"))
    after = _findings(_patched(docs, live))
    assert [g.field for g in after if g.rule.id == "PS034"] == []


def test_list_profiles_shows_each_familys_membership_and_when_it_depends_on_the_deployment() -> None:
    """check --list-profiles: the catalog's membership (catalog.yaml's header: quorum, primary,
    independent) per family, marked * where membershipWhen says it depends on the deployment."""
    import io

    from rich.console import Console

    from probesim.report.listings import render_profiles

    buffer = io.StringIO()
    render_profiles(catalog().values(), Console(file=buffer, width=400, color_system=None))
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    rows = {
        line.split()[0]: line.split() for line in lines if line.startswith("  ") and len(line.split()) > 3
    }
    assert rows["ID"][-1] == "MEMBERSHIP"
    assert rows["cockroachdb"][-2:] == ["quorum", "*"]
    assert rows["cockroachdb"][3:8] == ["httpGet", "/health", ":8080", "httpGet", "/health?ready=1"]
    assert rows["zookeeper"][-1] == "quorum"  # no deployment caveat: no *
    assert rows["postgres"][-2:] == ["primary", "*"]
    assert (rows["node"][-1], rows["generic"][-1]) == ("independent", "independent")
    notes = lines[lines.index("* it depends on the deployment:") + 1 :]
    assert notes[0] == "  postgres:      " + catalog()["postgres"].membership_when
    assert "  mongodb:       as a replica set; a standalone mongod is one instance" in notes
    assert not any(n.startswith("  zookeeper:") for n in notes)
    assert len([n for n in notes if n.startswith("  ") and ":" in n.split()[0]]) == len(
        [p for p in catalog().values() if p.membership_when]
    )
