"""Istio objects from manifests, validated with file and line in every error."""

from __future__ import annotations

from pydantic import ValidationError

from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.errors import from_validation
from probesim.manifests.yamlsrc import load_docs, read_text
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
