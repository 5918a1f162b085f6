"""Istio objects from manifests, validated with file and line in every error."""

from __future__ import annotations

import warnings

from pydantic import ValidationError

from probesim.errors import InputError, InputWarning
from probesim.manifests import kubernetes as k8s
from probesim.manifests.errors import from_validation
from probesim.manifests.yamlsrc import Doc, Path_, load_docs, read_text
from probesim.mesh.istio import DestinationRule, VirtualService


def load_mesh(paths: list[str]) -> tuple[list[DestinationRule], list[VirtualService], k8s.Objects]:
    docs = []
    for p in paths:
        docs += list(load_docs(*read_text(p)))
    objects = k8s.parse(docs)
    rules, services = istio_objects(objects)
    if not rules and not services:
        raise InputError(
            "no DestinationRule or VirtualService (networking.istio.io) in the input", file=", ".join(paths)
        )
    return rules, services, objects


def istio_objects(objects: k8s.Objects) -> tuple[list[DestinationRule], list[VirtualService]]:
    """The DestinationRules and VirtualServices among parsed manifests, validated."""
    rules: list[DestinationRule] = []
    services: list[VirtualService] = []
    for doc, base, data in objects.istio:
        kind = data["kind"]
        model: type[DestinationRule] | type[VirtualService] = (
            DestinationRule if kind == "DestinationRule" else VirtualService
        )
        name = (data.get("metadata") or {}).get("name") if isinstance(data.get("metadata"), dict) else None
        try:
            obj = model.model_validate(data)
        except ValidationError as e:
            raise from_validation(e, doc, base, f"{kind} {name}", data) from None
        (rules if isinstance(obj, DestinationRule) else services).append(obj)  # type: ignore[arg-type]
    return rules, services


def say_unsimulated_destinations(
    v: VirtualService, doc: Doc, base: Path_, services: set[str], rules: list[DestinationRule]
) -> None:
    """For a simulation: a route whose destinations the engine cannot follow (a host that is no
    Service of the scenario, a subset no DestinationRule of its host defines) is said once as a
    warning naming its file and line. Splits by weight and subset and other Services of the
    scenario are simulated (engine/sidecar/split.py, SplitRoute)."""
    subsets = {(r.spec.host.split(".")[0], s.name) for r in rules for s in r.spec.subsets}
    for i, r in enumerate(v.spec.http):
        missing = [
            d.destination
            for d in r.route
            if d.destination.host.split(".")[0] not in services
            or (
                d.destination.subset is not None
                and (d.destination.host.split(".")[0], d.destination.subset) not in subsets
            )
        ]
        if not missing:
            continue
        shown = ", ".join(
            d.destination.host
            + (f" subset {d.destination.subset}" if d.destination.subset else "")
            + (f" weight {d.weight}" if d.weight is not None else "")
            for d in r.route
        )
        what = ", ".join(
            (f"subset {d.subset} of {d.host}" if d.host.split(".")[0] in services else d.host)
            for d in missing
        )
        line = doc.line_of((*base, "spec", "http", i, "route"))
        warnings.warn(
            InputWarning(
                f"{doc.file}:{line}: VirtualService {v.metadata.name}: http[{i}] routes to {shown}: not "
                f"simulated for {what} (no Service of the scenario, or no DestinationRule subset of "
                "that name): its share of the requests finds no host (503)"
            ),
            stacklevel=2,
        )
