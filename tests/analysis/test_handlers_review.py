"""Probe handlers an SRE would sign (the review of public manifests, items 1, 6, 7 and 10): etcd's
health endpoints on a port the container listens on, with what its quorum means for readiness;
TCP checks never said to act on a hang; a database's own readiness check where TCP misses its
recovery (PS045) and its documented slow start judged against the startup probe (PS012);
grpc_health_probe moved to the kubelet's gRPC probe; Spring Boot's /livez kept by the startup
probe a fix adds. Each fix is exact, and applied alone it removes its finding and adds none."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.analysis.findings import Finding
from probesim.manifests.yamlsrc import load_docs
from probesim.profiles import ProfileCorrection, resolve
from tests.analysis.test_fixes import _one, _recheck


def _container(f: Finding) -> dict[str, Any]:
    assert f.patch is not None
    return f.patch["spec"]["containers"][0] if "containers" in f.patch["spec"] else (
        f.patch["spec"]["template"]["spec"]["containers"][0]
    )  # fmt: skip


# -- item 1: etcd ------------------------------------------------------------------------------

# etcd-io/etcd hack/kubernetes-deploy/etcd.yml, one member: a bare Pod, the clients' Service and
# the member's own Service, through which the other members reach it (http://etcd0:2380).
ETCD = """\
apiVersion: v1
kind: Service
metadata: {{name: etcd-client}}
spec:
  ports: [{{name: etcd-client-port, port: 2379, targetPort: 2379}}]
  selector: {{app: etcd}}
---
apiVersion: v1
kind: Pod
metadata:
  labels: {{app: etcd, etcd_node: etcd0}}
  name: etcd0
spec:
  containers:
  - command: [/usr/local/bin/etcd, --name, etcd0, --initial-advertise-peer-urls, http://etcd0:2380,
      --listen-peer-urls, http://0.0.0.0:2380, --listen-client-urls, http://0.0.0.0:2379,
      --advertise-client-urls, http://etcd0:2379,
      --initial-cluster, 'etcd0=http://etcd0:2380,etcd1=http://etcd1:2380,etcd2=http://etcd2:2380'{extra}]
    image: quay.io/coreos/etcd:latest
    name: etcd0
    ports: [{{containerPort: 2379, name: client}}, {{containerPort: 2380, name: server}}]
---
apiVersion: v1
kind: Service
metadata: {{name: etcd0}}
spec:
{publish}  ports: [{{name: client, port: 2379, targetPort: 2379}}, {{name: server, port: 2380, targetPort: 2380}}]
  selector: {{etcd_node: etcd0}}
"""


def test_etcd_readiness_is_on_the_client_port_and_says_quorum_peers_and_recreate() -> None:
    docs = list(load_docs(ETCD.format(extra="", publish=""), "etcd.yml"))
    [f] = [f for f in _one(ETCD.format(extra="", publish="")) if f.rule.id == "PS001"]
    # etcd serves /health on its client listeners (etcd docs, "other APIs": curl
    # http://10.0.0.10:2379/health); 2381 is only kubeadm's --listen-metrics-urls
    # (kubernetes cmd/kubeadm/app/phases/etcd/local.go), which this manifest does not pass.
    assert _container(f) == {
        "name": "etcd0",
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": 2379},
            "periodSeconds": 5,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        },
    }
    assert f.remediation == (
        "add readinessProbe: {httpGet: {path: /health, port: 2379}, periodSeconds: 5, timeoutSeconds: 1, "
        "failureThreshold: 3} (readiness takes a failing pod out within 16s; etcd's own readiness endpoint, "
        "which answers only while the cluster has quorum: when quorum is lost every member goes unready at "
        "once and the Service is left empty — chosen because a member without a leader cannot serve etcd's "
        "consistent reads and writes anyway; the other members reach this one through Service etcd0: set "
        "publishNotReadyAddresses: true on it, or a member that is not Ready yet is unreachable, no leader is "
        "elected and no member ever becomes Ready; a Pod's probes cannot be changed in place: delete the Pod "
        "and create it with the fix)"
    )
    assert f.assumed is not None and f.assumed.evidence[-1] == "--listen-client-urls port 2379"
    assert _recheck(docs) == 1


def test_etcd_peer_services_that_publish_not_ready_members_are_not_named() -> None:
    text = ETCD.format(extra="", publish="  publishNotReadyAddresses: true\n")
    [f] = [f for f in _one(text) if f.rule.id == "PS001"]
    assert "anyway; a Pod's probes cannot be changed in place" in f.remediation
    assert "publishNotReadyAddresses" not in f.remediation


def test_etcd_from_3_5_11_is_probed_on_livez_and_readyz() -> None:
    # etcd CHANGELOG-3.5, v3.5.11: /livez and /readyz (etcd-io/etcd#17039); kubeadm probes them
    # since 1.31 (kubernetes/kubernetes#124465). A tag that names no release keeps /health.
    text = ETCD.format(extra="", publish="").replace("etcd:latest", "etcd:v3.5.17")
    [f] = [f for f in _one(text) if f.rule.id == "PS001"]
    assert _container(f)["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 2379}
    assert f.assumed is not None
    assert f.assumed.evidence[1] == "release v3.5.17: /livez, /readyz (from 3.5.11)"
    assert "which answers only while the cluster has quorum" in f.remediation
    assert resolve("e", "e", {"image": "registry.k8s.io/etcd:3.5.10-0"}).profile.readiness == {
        "httpGet": {"path": "/health", "port": "{port}"}
    }


@pytest.mark.parametrize(
    ("words", "env", "port"),
    [
        # kubeadm's static pod: metrics on loopback, which the kubelet's httpGet to the pod IP
        # cannot reach; the client URL is next.
        (
            ["--listen-metrics-urls=http://127.0.0.1:2381", "--listen-client-urls=https://10.0.0.5:2379"],
            {},
            2379,
        ),
        (
            ["--listen-metrics-urls", "http://0.0.0.0:2381", "--listen-client-urls", "http://0.0.0.0:2379"],
            {},
            2381,
        ),
        (["--listen-client-urls=http://127.0.0.1:2379,http://0.0.0.0:12379"], {}, 12379),
        # Plain http before https: an httpGet is plain unless its scheme says otherwise.
        (
            ["--listen-metrics-urls=https://0.0.0.0:2381", "--listen-client-urls=http://0.0.0.0:2379"],
            {},
            2379,
        ),
        ([], {"ETCD_LISTEN_METRICS_URLS": "http://0.0.0.0:9379"}, 9379),  # etcd reads ETCD_<FLAG>
        ([], {}, None),  # no flag: the port the container serves
    ],
)
def test_etcd_health_port_comes_from_its_flags(
    words: list[str], env: dict[str, str], port: int | None
) -> None:
    raw = {
        "image": "quay.io/coreos/etcd:v3.5.12",
        "command": ["etcd", *words],
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    assert resolve("etcd", "etcd", raw).profile.health_port == port


def test_a_users_health_port_and_handlers_win_over_flags_and_release() -> None:
    raw = {
        "image": "quay.io/coreos/etcd:v3.5.17",
        "command": ["etcd", "--listen-metrics-urls=http://0.0.0.0:2381"],
    }
    fix = ProfileCorrection.model_validate({"healthPort": 8080, "readiness": {"httpGet": {"path": "/ready"}}})
    r = resolve("etcd", "etcd", raw, (fix,))
    assert (r.profile.health_port, r.profile.readiness) == (8080, {"httpGet": {"path": "/ready"}})
    assert r.profile.liveness == {"httpGet": {"path": "/livez", "port": "{port}"}}  # not corrected


# -- item 6: TCP checks, a database's own readiness, its slow start ----------------------------

# spring-projects/spring-petclinic k8s/db.yml: PostgreSQL probed by TCP on every probe.
POSTGRES = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: demo-db}
spec:
  selector: {matchLabels: {app: demo-db}}
  template:
    metadata: {labels: {app: demo-db}}
    spec:
      containers:
      - name: postgresql
        image: postgres:17.5
        ports: [{name: postgresql, containerPort: 5432}]
        livenessProbe: {tcpSocket: {port: postgresql}}
        readinessProbe: {tcpSocket: {port: postgresql}}
        startupProbe: {tcpSocket: {port: postgresql}}
---
apiVersion: v1
kind: Service
metadata: {name: demo-db}
spec:
  selector: {app: demo-db}
  ports: [{port: 5432, targetPort: postgresql}]
"""


def test_a_tcp_readiness_on_postgres_becomes_pg_isready_and_the_startup_covers_its_recovery() -> None:
    found = {f.rule.id: f for f in _one(POSTGRES)}
    assert set(found) == {"PS003", "PS012", "PS045"}
    # pg_isready exits 1 while the server rejects connections (PostgreSQL docs, pg_isready), which
    # it does through crash recovery while the port is open; the catalog's worst start is 10m,
    # and 1.5 × 600 s over the default period 10 s is 90 failures.
    assert found["PS012"].message == "the startup probe gives up after 30s; PostgreSQL can need 10m to start"
    assert found["PS045"].message == (
        "readinessProbe opens a TCP connection only: PostgreSQL accepts one before it can serve"
    )
    assert _container(found["PS045"]) == {
        "name": "postgresql",
        "readinessProbe": {
            "exec": {"command": ["pg_isready", "-h", "127.0.0.1", "-p", "5432"]},
            "tcpSocket": None,
            "timeoutSeconds": 5,
        },
        "livenessProbe": {"failureThreshold": 5},
        "startupProbe": {"failureThreshold": 90},
    }
    assert found["PS045"].remediation == (
        'startupProbe.failureThreshold: 90, add readinessProbe.exec: {command: [pg_isready, -h, "127.0.0.1", -p, '
        '"5432"]}, remove readinessProbe.tcpSocket, readinessProbe.timeoutSeconds: 5, '
        "livenessProbe.failureThreshold: 5 (startup allows 900s, readiness takes a failing pod out within 35s, "
        "liveness restarts a container whose port stops accepting connections within 51s (a TCP check does not "
        "see a hang: a hung process still accepts them); readiness by PostgreSQL's own check: PostgreSQL accepts "
        "connections during crash recovery and while it starts or shuts down, and refuses every query then "
        "(FATAL: the database system is starting up); pg_isready reports it (exit 1, rejecting connections))"
    )
    assert found["PS012"].patch == found["PS045"].patch == found["PS003"].patch  # one plan
    assert _recheck(list(load_docs(POSTGRES, "db.yml"))) == 3


def test_no_fix_says_a_tcp_liveness_acts_on_a_hang() -> None:
    # engine/kubelet.py: a hung process still accepts TCP connections (the kernel completes the
    # handshake), so a tcpSocket probe passes; Kubernetes' e2e keeps a 500-answering server alive
    # with a TCP liveness probe (test/e2e/common/node/container_probe.go).
    text = POSTGRES.replace("postgres:17.5", "example/queue:1").replace(
        "livenessProbe: {tcpSocket: {port: postgresql}}",
        "livenessProbe: {tcpSocket: {port: postgresql}, failureThreshold: 1}",
    )
    [f] = [f for f in _one(text) if f.rule.id == "PS010"]
    assert f.remediation == (
        "livenessProbe.failureThreshold: 5 (startup allows 30s, readiness takes a pod whose port stops accepting "
        "connections out within 31s, liveness restarts a container whose port stops accepting connections within "
        "51s (a TCP check does not see a hang: a hung process still accepts them))"
    )
    assert all("acts on a hang" not in g.remediation for g in _one(text) + _one(POSTGRES))


def test_redis_readiness_waits_for_pong_and_rabbitmq_keeps_its_operators_tcp() -> None:
    text = POSTGRES.replace("postgres:17.5", "redis:7.2-alpine")
    [f] = [f for f in _one(text) if f.rule.id == "PS045"]
    # redis-cli exits 0 on an error reply such as LOADING (spotahome/redis-operator#576,
    # OT-CONTAINER-KIT/redis-operator#1626): readiness must read the answer.
    assert _container(f)["readinessProbe"]["exec"] == {
        "command": ["sh", "-c", "redis-cli -p 5432 ping | grep -q PONG"]
    }
    # RabbitMQ's cluster operator probes the AMQP port by TCP; MySQL does not listen during its
    # InnoDB recovery: the catalog says no tcpMisses for them, and PS045 stays quiet.
    for image in ("rabbitmq:3.13", "mysql:8.0"):
        assert "PS045" not in {g.rule.id for g in _one(POSTGRES.replace("postgres:17.5", image))}


# -- item 7: grpc_health_probe -----------------------------------------------------------------

# GoogleCloudPlatform/microservices-demo v0.2.0 shippingservice (Flowmill's fork): exec probes
# of grpc_health_probe with the default 1 s timeout, every 5 s.
GRPC = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: shippingservice}}
spec:
  selector: {{matchLabels: {{app: shippingservice}}}}
  template:
    metadata: {{labels: {{app: shippingservice}}}}
    spec:
      containers:
      - name: server
        image: gcr.io/google-samples/microservices-demo/shippingservice:v0.2.0
        ports: [{{containerPort: 50051}}]
        readinessProbe:
          periodSeconds: 5
          exec: {{command: [/bin/grpc_health_probe, "-addr=:50051"{flags}]}}
        livenessProbe:
          exec: {{command: [/bin/grpc_health_probe, "-addr=:50051"{flags}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: shippingservice}}
spec:
  selector: {{app: shippingservice}}
  ports: [{{name: grpc, port: 50051, targetPort: 50051}}]
"""


def test_grpc_health_probe_with_a_1s_timeout_becomes_the_kubelets_grpc_probe() -> None:
    text = GRPC.format(flags=', "-service=hipstershop.ShippingService"')
    found = [f for f in _one(text) if f.rule.id == "PS015"]
    assert [f.message for f in found] == [
        "readinessProbe is exec with the default timeoutSeconds (1)",
        "livenessProbe is exec with the default timeoutSeconds (1)",
    ]
    # grpc_health_probe's own -connect-timeout and -rpc-timeout default to 1 s
    # (grpc-ecosystem/grpc-health-probe main.go: flag.DurationVar(..., time.Second, ...)), so a
    # longer timeoutSeconds alone does not help; the kubelet's grpc probe (pkg/probe/grpc) takes
    # timeoutSeconds as the RPC's deadline. The periods stay the user's (5 s and 10 s).
    grpc = {"port": 50051, "service": "hipstershop.ShippingService"}
    assert _container(found[0]) == {
        "name": "server",
        "readinessProbe": {"grpc": grpc, "exec": None, "timeoutSeconds": 3},
        "livenessProbe": {"grpc": grpc, "exec": None, "timeoutSeconds": 3},
    }
    assert found[0].remediation.startswith(
        "add readinessProbe.grpc: {port: 50051, service: hipstershop.ShippingService}, remove "
        "readinessProbe.exec, readinessProbe.timeoutSeconds: 3, add livenessProbe.grpc: {port: 50051, service: "
        "hipstershop.ShippingService}, remove livenessProbe.exec, livenessProbe.timeoutSeconds: 3 (readiness "
        "takes a failing pod out within 18s, liveness acts on a hang within 33s; readiness and liveness by the "
        "kubelet's own gRPC probe (GA in Kubernetes 1.27)"
    )
    assert "-connect-timeout and -rpc-timeout, 1s each by default" in found[0].remediation
    assert _recheck(list(load_docs(text, "x.yaml"))) == 2


def test_grpc_health_probe_over_tls_stays_an_exec_with_room_to_start() -> None:
    # The kubelet's gRPC probe speaks no TLS: the exec stays, with the 5 s exec timeout and a
    # period above it, as before.
    found = [f for f in _one(GRPC.format(flags=', "-tls"')) if f.rule.id == "PS015"]
    assert _container(found[0])["readinessProbe"] == {"periodSeconds": 10, "timeoutSeconds": 5}
    assert "exec" not in _container(found[0])["livenessProbe"]


# -- item 10: Spring Boot's additional paths ---------------------------------------------------

# spring-projects/spring-petclinic k8s/petclinic.yml: /livez and /readyz on the main port.
PETCLINIC = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: petclinic}}
spec:
  selector: {{matchLabels: {{app: petclinic}}}}
  template:
    metadata: {{labels: {{app: petclinic}}}}
    spec:
      containers:
      - name: workload
        image: dsyer/petclinic
        env: {env}
        ports: [{{name: http, containerPort: 8080}}]
        livenessProbe: {{httpGet: {{path: /livez, port: http}}}}
        readinessProbe: {{httpGet: {{path: /readyz, port: http}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: petclinic}}
spec:
  selector: {{app: petclinic}}
  ports: [{{port: 80, targetPort: 8080}}]
"""


@pytest.mark.parametrize(
    "env",
    [
        '[{name: SPRING_APPLICATION_JSON, value: "{\\"management.endpoint.health.probes.add-additional-paths\\": true}"}]',
        "[{name: MANAGEMENT_ENDPOINT_HEALTH_PROBES_ADD_ADDITIONAL_PATHS, value: 'true'}]",
    ],
)
def test_spring_boots_additional_paths_keep_the_startup_probe_on_livez(env: str) -> None:
    [f] = [f for f in _one(PETCLINIC.format(env=env)) if f.rule.id == "PS013"]
    # Spring Boot reference, Actuator > Kubernetes Probes: add-additional-paths serves the
    # liveness group at /livez on the main port; a startup probe checks what liveness checks.
    assert _container(f)["startupProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert f.assumed is not None
    assert (
        f.assumed.evidence[-1]
        == "management.endpoint.health.probes.add-additional-paths serves /livez, /readyz"
    )


def test_without_the_setting_spring_boots_own_liveness_group_is_the_startup_check() -> None:
    [f] = [f for f in _one(PETCLINIC.format(env="[]")) if f.rule.id == "PS013"]
    assert _container(f)["startupProbe"]["httpGet"] == {"path": "/actuator/health/liveness", "port": "http"}


def test_etcd_statefulset_names_its_headless_peer_service_and_says_no_recreate() -> None:
    # Members of a StatefulSet find each other as <pod>.<headless Service>; a headless Service's
    # DNS lists only Ready pods unless publishNotReadyAddresses (Kubernetes' DNS spec for Services).
    text = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: etcd}
spec:
  serviceName: etcd-headless
  replicas: 3
  selector: {matchLabels: {app: etcd}}
  template:
    metadata: {labels: {app: etcd}}
    spec:
      containers:
      - name: etcd
        image: quay.io/coreos/etcd:v3.5.9
        command: [sh, -c, "etcd --name $(HOSTNAME) --initial-advertise-peer-urls http://$(HOSTNAME).etcd-headless:2380 --listen-client-urls http://0.0.0.0:2379"]
        ports: [{containerPort: 2379, name: client}, {containerPort: 2380, name: peer}]
---
apiVersion: v1
kind: Service
metadata: {name: etcd-headless}
spec:
  clusterIP: None
  selector: {app: etcd}
  ports: [{name: client, port: 2379}, {name: peer, port: 2380}]
"""
    [f] = [f for f in _one(text) if f.rule.id == "PS001"]
    assert _container(f)["readinessProbe"]["httpGet"] == {"path": "/health", "port": 2379}
    assert f.remediation.endswith(
        "the other members reach this one through Service etcd-headless: set publishNotReadyAddresses: true on "
        "it, or a member that is not Ready yet is unreachable, no leader is elected and no member ever becomes "
        "Ready)"
    )
