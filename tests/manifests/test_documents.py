"""One bad document never takes its neighbours (issue 40 item 5): a YAML stream is read document
by document, each error confined to its document, at its lines in the whole file."""

from __future__ import annotations

import pytest

from probesim.errors import InputError
from probesim.manifests.yamlsrc import Doc, load_docs, read_documents


def cm(name: str, extra: str = "") -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata:\n  a: x\n{extra}"


def shown(text: str) -> list[str]:
    """Each document as 'name@line', each error as 'error@line: message'."""
    out = []
    for d in read_documents(text, "m.yaml"):
        if isinstance(d, Doc):
            out.append(f"{d.data['metadata']['name']}@{d.line}")
        else:
            out.append(f"error@{d.line}: {d.obj}: {d.message}")
    return out


def test_a_duplicate_key_is_an_error_of_its_document_naming_both_lines() -> None:
    text = cm("one") + "---\n" + cm("two", "  b: y\n  a: z\n") + "---\n" + cm("three")
    assert shown(text) == [
        "one@1",
        'error@13: ConfigMap two: duplicate key "data.a" (already defined at line 11)',
        "three@15",
    ]


@pytest.mark.parametrize(
    ("broken", "error"),
    [
        # an unclosed flow mapping, said at the document's last line (not the next one's marker)
        ("metadata: {name: two\n", "error@9: None: YAML syntax error: did not find expected ',' or '}'"),
        # a tab where indentation is expected
        ("data:\n\ta: x\n", "error@10: None: YAML syntax error: found character that cannot start any token"),
        # an unclosed quote: YAML forbids a marker inside it, so it ends at its document
        ('metadata: {name: "two}\n', "error@9: None: YAML syntax error: found unexpected end of stream"),
    ],
)
def test_a_syntax_error_in_the_middle_document_keeps_the_others(broken: str, error: str) -> None:
    middle = "apiVersion: v1\nkind: ConfigMap\n" + broken
    text = cm("one") + "---\n" + middle + "---\n" + cm("three") + "---\n" + cm("four")
    n = middle.count("\n")
    assert shown(text) == ["one@1", error, f"three@{8 + n}", f"four@{14 + n}"]


def test_errors_in_the_first_and_last_documents_and_end_markers() -> None:
    text = "a: [\n---\n" + cm("two") + "...\n" + "---\n" + cm("three") + "---\nb: 'x\n"
    assert shown(text) == [
        "error@1: None: YAML syntax error: did not find expected node content",
        "two@3",
        "three@10",
        "error@16: None: YAML syntax error: found unexpected end of stream",
    ]


def test_directives_and_helm_sources_stay_with_their_document() -> None:
    # Parsed document by document (the first one is broken), "%YAML" belongs to the document
    # below it, and each keeps helm's "# Source:" comment and its lines in the whole file.
    text = (
        "x: [\n---\n# Source: c/templates/a.yaml\n" + cm("a") + "%YAML 1.1\n---\n"
        "# Source: c/templates/b.yaml\n" + cm("b")
    )
    docs = list(read_documents(text, "m.yaml"))
    assert [type(d).__name__ for d in docs] == ["InputError", "Doc", "Doc"]
    a, b = docs[1], docs[2]
    assert isinstance(a, Doc) and isinstance(b, Doc)
    assert [(a.line, a.source), (b.line, b.source)] == [(4, "c/templates/a.yaml"), (12, "c/templates/b.yaml")]
    assert b.line_of(("data", "a")) == 16


def test_load_docs_raises_the_first_error() -> None:
    text = cm("one") + "---\n" + cm("two", "  a: again\n")
    with pytest.raises(InputError) as e:
        list(load_docs(text, "s.yaml"))
    assert (e.value.file, e.value.line) == ("s.yaml", 12)
