"""The result document's one schema (results/document.py) against what Result.to_json writes:
every built-in's result, with its thresholds' verdicts, parses with no field unknown to the
schema and dumps back to the same JSON; the JSON Schema printed for users accepts it."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.manifests.scenario import load_scenario
from probesim.model.judged import judged_by
from probesim.results.document import ResultDoc, parse_result
from probesim.results.thresholds import evaluate
from probesim.scenarios import builtins


def _unknown(m: BaseModel, at: str = "") -> list[str]:
    """Every field of ``m`` (and of the models inside it) the schema does not name."""
    found = [f"{at}.{k}" for k in (m.model_extra or {})]
    for name in type(m).model_fields:
        v = getattr(m, name)
        for i, item in enumerate(v if isinstance(v, list) else [v]):
            if isinstance(item, BaseModel):
                found += _unknown(item, f"{at}.{name}[{i}]" if isinstance(v, list) else f"{at}.{name}")
    return found


# As run --threshold gives them (each kind of metric, a tag, a percentage), beside the scenario's.
THRESHOLDS = ("errors: rate<0.01", "p95: <500ms", "restarts: ==0", "ready: min>=50%")


@functools.cache
def _text(name: str) -> str:
    b = next(b for b in builtins() if b.name == name)
    sc = load_scenario(str(b.path))
    result = simulate(sc)
    doc = result.to_json(series=name == "seed000-demo")
    route = f"p99{{route:{result.routes[0].name}}}: <1s" if result.routes else "errors: rate<1"
    judged = judged_by(sc, (*THRESHOLDS, route), str(b.path))
    doc["thresholds"] = [v.to_json() for v in evaluate(judged, result)]
    return json.dumps(doc)


def _document(name: str) -> dict[str, Any]:
    """A built-in's result as a reader gets it (JSON text parsed), with verdicts."""
    return json.loads(_text(name))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", [b.name for b in builtins()])
def test_every_builtins_result_is_the_schema_and_back(name: str) -> None:
    doc = _document(name)
    parsed = parse_result(doc, "r.json")
    assert _unknown(parsed) == []
    assert parsed.model_dump(mode="json", exclude_unset=True) == doc


def test_the_schema_covers_ramps_rollouts_envoy_and_thresholds() -> None:
    """The parts a result has only in some runs are among the built-ins the test above reads."""
    docs = [_document(b.name) for b in builtins()]
    routes = [r for d in docs for r in d["summary"]["routes"]]
    assert any("ramp" in r and r["steady"] is not None for r in routes)
    assert any(r["envoy"] for r in routes)
    assert any(d["summary"].get("rollouts") for d in docs)
    assert any(d["thresholds"] for d in docs)


def test_a_field_of_the_wrong_type_is_named() -> None:
    doc = _document("seed000-demo")
    doc["summary"]["workloads"][0]["restarts"] = "two"
    with pytest.raises(Exception, match=r"summary\.workloads\[0\]\.restarts"):
        parse_result(doc, "r.json")


def test_schema_result_prints_the_result_documents_json_schema() -> None:
    r = CliRunner().invoke(app, ["schema", "--result"])
    assert r.exit_code == 0, r.output
    schema = json.loads(r.output)
    assert schema["$id"] == "probesim.dev/v1alpha1/Result"
    assert schema["properties"] == ResultDoc.model_json_schema()["properties"]
    assert {"apiVersion", "kind", "summary", "events"} <= set(schema["required"])
    jsonschema.validate(_document("seed000-demo"), schema)
    bad = _document("seed000-demo") | {"seed": "zero"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_a_run_with_nodes_is_the_schema_and_back() -> None:
    """summary.nodes and summary.pendingPods (a run that gives spec.cluster.nodes, a node failing,
    a pod that fits nowhere) parse with no field unknown and dump back the same; the JSON Schema
    accepts them."""
    from tests.builders import scenario

    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "600m"}}}
    sc = scenario(
        containers=[container],
        replicas=4,
        duration="2m",
        spec={
            "cluster": {"nodes": {"count": 3, "zones": ["a", "b", "c"], "cpu": 1}},
            "actions": [{"kind": "nodeDown", "node": "node-2", "at": "10s"}],
        },
    )
    doc = json.loads(json.dumps(simulate(sc).to_json()))
    assert [n["name"] for n in doc["summary"]["nodes"]] == ["node-1", "node-2", "node-3"]
    assert doc["summary"]["pendingPods"] == ["web-3"]
    parsed = parse_result(doc, "r.json")
    assert _unknown(parsed) == []
    assert parsed.model_dump(mode="json", exclude_unset=True) == doc
    jsonschema.validate(doc, json.loads(CliRunner().invoke(app, ["schema", "--result"]).output))
