"""Random and hostile YAML: a clean InputError or a valid model, never anything else."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import load_docs
from tests.property.hostile import paths_of

BASE: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "livenessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5},
                    }
                ]
            },
        },
    },
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _outcome(text: str) -> None:
    try:
        k8s.parse(load_docs(text, "fuzz.yaml"))
    except InputError as e:
        assert e.file == "fuzz.yaml"
        assert str(e)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_manifests_give_a_model_or_a_clean_error(data: st.DataObject) -> None:
    import copy

    doc = copy.deepcopy(BASE)
    paths = [p for p in paths_of(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        value = data.draw(values)
        try:  # an earlier mutation may have replaced part of the path
            node = doc
            for p in path[:-1]:
                node = node[p]
            node[path[-1]] = value
        except (IndexError, KeyError, TypeError):
            continue
    _outcome(yaml.safe_dump(doc))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc:-[]{}&*!|>'\"#\n ,?%@`0123456789.")), max_size=200))
def test_random_text_gives_a_model_or_a_clean_error(text: str) -> None:
    _outcome(text)


def test_billion_laughs_is_refused() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    try:
        list(load_docs("\n".join(lines), "fuzz.yaml"))
    except InputError as e:
        assert "alias bomb" in e.message
    else:
        raise AssertionError("expanded a billion laughs")
