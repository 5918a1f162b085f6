"""Check's fixes read against the public guidance (analysis/policy.py) on seven workloads of
different kinds, written as their teams write them (tests/analysis/review/): a fast Go service,
a slow-starting Spring Boot service, a Python web app, a gRPC service, a queue worker, a MySQL
StatefulSet and a Flask app behind Istio. With every fix of a container applied, no principle the
original kept is broken, and fewer are broken than before on most of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from probesim.analysis.context import Context, Target
from probesim.analysis.policy import broken
from probesim.analysis.rules.timing import Timing, probes_of
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import Doc, load_docs
from tests.analysis.test_fixes import _findings, _patched

REVIEW = Path(__file__).parent / "review"


def _principles(docs: list[Doc]) -> dict[str, set[str]]:
    ctx = Context(k8s.parse(docs))
    return {
        f"{t.workload.name}/{t.container.name}": broken(
            {k: Timing.of(p) for k, p in probes_of(t)}, bool(t.serves), t.profile, _liveness_path(t)
        )
        for t in ctx.targets
    }


def _liveness_path(t: Target) -> str | None:
    p = t.container.liveness_probe
    return p.http_get.path if p is not None and p.http_get is not None else None


def _fixed(docs: list[Doc]) -> list[Doc]:
    """Every finding's patch applied, one after another (they are one plan: never two values of
    one field)."""
    for f in _findings(docs):
        if f.patch is not None:
            docs = _patched(docs, f)
    return docs


# What each kind breaks before (the reviewer's reading of the manifest) and after check's fixes.
EXPECTED = {
    "flask-istio.yaml": ({"liveness-more-tolerant"}, set()),
    "go-api.yaml": ({"liveness-more-tolerant", "liveness-rides-out-pauses"}, set()),
    "grpc-service.yaml": ({"liveness-more-tolerant", "timeout-below-period"}, set()),
    "mysql-statefulset.yaml": ({"liveness-more-tolerant", "startup-not-initial-delay"}, set()),
    "python-web.yaml": ({"readiness-on-serving"}, set()),
    "queue-worker.yaml": (set(), set()),
    "spring-jvm.yaml": (
        {"readiness-on-serving", "startup-not-initial-delay", "liveness-only-where-restart-cures"},
        set(),
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixes_break_no_principle_the_original_kept(name: str) -> None:
    docs = list(load_docs((REVIEW / name).read_text(), name))
    [(who, before)] = _principles(docs).items()
    [after] = _principles(_fixed(docs)).values()
    assert (before, after) == EXPECTED[name], who
    assert after <= before


def test_fixes_leave_fewer_principles_broken_on_most_kinds() -> None:
    assert sorted(p.name for p in REVIEW.glob("*.yaml")) == sorted(EXPECTED)
    better = [n for n, (before, after) in EXPECTED.items() if len(after) < len(before)]
    assert len(better) >= 5, better
