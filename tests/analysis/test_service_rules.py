"""PS041 (a Service whose selector matches no pod of its namespace, though the workload it is for
is checked) and PS042 (a targetPort its pods do not have): the EndpointSlice controller takes a
Service's pods from its own namespace only, by every pair of its selector
(pkg/controller/endpointslice/reconciler.go over the Service's selector), and leaves a pod out of
a port whose named targetPort it does not declare (podutil.FindPort in
pkg/controller/util/endpointslice: "no suitable port for manifest")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from probesim.analysis.check import check
from probesim.analysis.findings import Finding
from tests.analysis.test_disruption_rules import fixed

RULES = ("PS041", "PS042")


def deployment(name: str, labels: dict[str, str], ports: list[dict[str, Any]], ns: str | None = None,
               args: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, **({"namespace": ns} if ns else {})}
    c: dict[str, Any] = {"name": name, "image": f"example/{name}:1", "ports": ports}
    if args:
        c["args"] = args
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [c]}},
        },
    }


def service(name: str, selector: dict[str, str], port: int, target: int | str | None,
            ns: str | None = None) -> dict[str, Any]:  # fmt: skip
    sp: dict[str, Any] = {"name": "web", "port": port}
    if target is not None:
        sp["targetPort"] = target
    meta: dict[str, Any] = {"name": name, **({"namespace": ns} if ns else {})}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": selector, "ports": [sp]},
    }


def run(tmp_path: Path, objs: list[dict[str, Any]]) -> list[Finding]:
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return [x for x in check([str(f)]).findings if x.rule.id in RULES]


def test_a_service_without_a_namespace_misses_its_workloads_pods_and_the_fix_moves_it(tmp_path: Path) -> None:
    objs = [deployment("vote", {"app": "vote"}, [{"containerPort": 80}], ns="vote"),
            service("vote", {"app": "vote"}, 5000, 80)]  # fmt: skip
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.obj, f.namespace) == ("PS041", "Service/vote", "default")
    assert f.message == (
        "selects app: vote, the labels of Deployment vote's pods, but those are in namespace vote and the "
        "Service sets no namespace: kubectl apply puts it in the one it runs in (default unless -n says "
        "another): it has no endpoint"
    )
    assert f.patch == {"metadata": {"namespace": "vote"}}
    assert run(tmp_path, fixed(objs, f)) == []


def test_a_selector_renamed_on_one_side_gets_the_pods_labels(tmp_path: Path) -> None:
    objs = [deployment("result", {"app": "result", "tier": "web"}, [{"containerPort": 80}]),
            service("result", {"app": "results", "tier": "web"}, 5001, 80)]  # fmt: skip
    (f,) = run(tmp_path, objs)
    assert f.rule.id == "PS041" and f.field == "spec.selector"
    assert (
        "which no pod in namespace default carries: Deployment result's pods are labelled app: result;"
        in (f.message)
    )
    assert f.patch == {"spec": {"selector": {"app": "result", "tier": "web"}}}
    assert run(tmp_path, fixed(objs, f)) == []


def test_a_service_for_pods_not_in_the_files_is_not_judged(tmp_path: Path) -> None:
    # An operator's pods (a Prometheus custom resource's StatefulSet) or pods in other files: no
    # workload checked is plainly the one meant, so nothing is said.
    objs = [deployment("api", {"app": "api"}, [{"containerPort": 8080}]),
            service("prometheus-k8s", {"app.kubernetes.io/name": "prometheus"}, 9090, "web")]  # fmt: skip
    assert run(tmp_path, objs) == []


def test_a_named_target_port_no_container_declares_gets_no_endpoint(tmp_path: Path) -> None:
    ports = [{"name": "service", "containerPort": 9898}]
    objs = [
        deployment("frontend", {"app": "frontend"}, ports),
        service("frontend", {"app": "frontend"}, 80, "http"),
    ]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.field) == ("PS042", "spec.ports[0].targetPort")
    assert f.message == ("port 80 targets the named port 'http', which Deployment frontend's containers do not "
                         "declare (named ports: service): its pods get no endpoint for it")  # fmt: skip
    assert f.patch == {"spec": {"ports": [{"name": "web", "port": 80, "targetPort": 9898}]}}
    assert run(tmp_path, fixed(objs, f)) == []
    # Declared by one of the workloads the selector matches: traffic reaches those pods.
    other = deployment(
        "frontend-v2", {"app": "frontend", "v": "2"}, [{"name": "http", "containerPort": 9898}]
    )
    assert run(tmp_path, [*objs, other]) == []


def test_a_number_is_judged_only_on_a_pod_with_one_port_that_names_it_nowhere(tmp_path: Path) -> None:
    one = [
        deployment("vote", {"app": "vote"}, [{"containerPort": 80}]),
        service("vote", {"app": "vote"}, 5000, 8080),
    ]
    (f,) = run(tmp_path, one)
    assert f.message == ("port 5000 sends to 8080, but Deployment vote's one declared port is 80 (container "
                         "vote): unless the app also listens on 8080, every request is refused")  # fmt: skip
    assert f.patch == {"spec": {"ports": [{"name": "web", "port": 5000, "targetPort": 80}]}}
    assert run(tmp_path, fixed(one, f)) == []
    # Told to listen there (args), or a pod with several ports (which often listens on more than
    # it lists, as Jaeger's all-in-one does): not judged.
    told = [deployment("vote", {"app": "vote"}, [{"containerPort": 80}], args=["--port=8080"]), one[1]]
    assert run(tmp_path, told) == []
    several = [deployment("vote", {"app": "vote"}, [{"containerPort": 80}, {"containerPort": 9090}]), one[1]]
    assert run(tmp_path, several) == []
    # No targetPort: the port itself is the target.
    bare = [one[0], service("vote", {"app": "vote"}, 8080, None)]
    (g,) = run(tmp_path, bare)
    assert g.field == "spec.ports[0]" and "sends to 8080" in g.message


def test_pods_matched_in_two_other_namespaces_are_not_plainly_the_ones_meant(tmp_path: Path) -> None:
    objs = [deployment("web", {"app": "web"}, [{"containerPort": 80}], ns="a"),
            deployment("web", {"app": "web"}, [{"containerPort": 80}], ns="b"),
            service("web", {"app": "web"}, 80, 80)]  # fmt: skip
    assert run(tmp_path, objs) == []
    assert [f.patch for f in run(tmp_path, objs[::2])] == [{"metadata": {"namespace": "a"}}]
