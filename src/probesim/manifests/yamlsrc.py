"""Read YAML streams into plain data, remembering the line of every key and item.

PyYAML composes a node tree (with line marks); we build the Python data ourselves so that
(1) every path has a line for error messages, (2) mapping keys stay the text the user wrote
(YAML 1.1 would turn ``on:`` into ``True``), (3) duplicate keys are an error, as with
kubectl's strict decoding, and (4) alias bombs and deep nesting end in a clean error instead of
exhausting memory or the stack.
"""

from __future__ import annotations

import datetime
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from probesim.errors import InputError

Path_ = tuple[str | int, ...]

MAX_NODES = 200_000  # after alias expansion; real manifests are far below this
MAX_DEPTH = 64
# In a file. The largest real manifests (CRD bundles) are a few MB, and the API server takes
# objects of at most ~1.5 MB; parsing 22 MB of YAML took 15 s and 890 MB.
MAX_CHARS = 10_000_000
# libyaml's parser when PyYAML was built with it (about 10x faster on big CRDs); same nodes and marks.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Doc:
    """One YAML document: its data, and the line (1-based) of each path inside it."""

    file: str
    data: Any
    line: int
    lines: dict[Path_, int] = field(default_factory=dict)
    source: str | None = None  # helm's "# Source: chart/templates/x.yaml" comment, if any

    def line_of(self, path: Path_) -> int:
        """The line of ``path``, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.line


def get_path(data: Any, path: Path_) -> Any:
    """The value at ``path`` in plain data (keys and list indices), or None."""
    for p in path:
        if isinstance(data, dict) and isinstance(p, str):
            data = data.get(p)
        elif isinstance(data, list) and isinstance(p, int) and 0 <= p < len(data):
            data = data[p]
        else:
            return None
    return data


class _Builder:
    """One document's data from its node; ``offset``: the lines of the file before the text the
    loader read (a document parsed on its own)."""

    def __init__(self, file: str, loader: yaml.SafeLoader, offset: int = 0) -> None:
        self.file = file
        self.loader = loader
        self.offset = offset
        self.count = 0
        self.lines: dict[Path_, int] = {}

    def _line(self, node: yaml.Node) -> int:
        return int(node.start_mark.line) + 1 + self.offset

    def build(self, node: yaml.Node, path: Path_, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise InputError(
                f"document expands to more than {MAX_NODES} values (an alias bomb?)",
                file=self.file,
                line=self._line(node),
            )
        if depth > MAX_DEPTH:
            raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=self.file, line=self._line(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            out = []
            for i, item in enumerate(node.value):
                self.lines.setdefault((*path, i), self._line(item))
                out.append(self.build(item, (*path, i), depth + 1))
            return out
        if node.tag == "tag:yaml.org,2002:value":
            return node.value  # YAML 1.1's "=" scalar: Kubernetes reads it as the string "="
        try:
            value = self.loader.construct_object(node, deep=False)
        except (ValueError, TypeError, AttributeError, OverflowError):
            # An integer of more than 4300 digits (Python's limit); a date PyYAML's constructor
            # fails on (an explicit !!timestamp that does not match its pattern raised an
            # AttributeError).
            if node.tag == "tag:yaml.org,2002:timestamp":
                return node.value  # Kubernetes reads timestamps as strings, valid dates or not
            raise InputError(
                f"cannot read this {node.tag.rsplit(':', 1)[-1]} of {len(node.value)} characters",
                file=self.file,
                line=self._line(node),
            ) from None
        if isinstance(value, datetime.date | datetime.datetime):
            return node.value  # Kubernetes reads timestamps as strings
        if isinstance(value, bytes):
            raise InputError("binary values are not supported", file=self.file, line=self._line(node))
        return value

    def _mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merges: list[dict[str, Any]] = []
        for key_node, value_node in node.value:
            line = self._line(key_node)
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError("mapping keys must be plain strings", file=self.file, line=line)
            key = str(key_node.value)
            if key == "<<" and key_node.tag == "tag:yaml.org,2002:merge":
                merged = self.build(value_node, path, depth + 1)
                items = merged if isinstance(merged, list) else [merged]
                if not all(isinstance(m, dict) for m in items):
                    raise InputError("a merge key (<<) needs a mapping", file=self.file, line=line)
                merges.extend(items)
                continue
            if key in out:
                shown = ".".join(str(p) for p in (*path, key))
                first = self.lines.get((*path, key))
                where = f" (already defined at line {first})" if first is not None else ""
                raise InputError(f'duplicate key "{shown}"{where}', file=self.file, line=line)
            self.lines[(*path, key)] = line
            out[key] = self.build(value_node, (*path, key), depth + 1)
        for m in merges:
            for k, v in m.items():
                out.setdefault(k, v)
        return out


_SOURCE = re.compile(r"^# Source: (.+)$")


def _helm_sources(text: str) -> list[tuple[int, str]]:
    return [(i + 1, m.group(1).strip()) for i, ln in enumerate(text.splitlines()) if (m := _SOURCE.match(ln))]


def _bounded(text: str, shown: str) -> str:
    if len(text) > MAX_CHARS:
        raise InputError(
            f"more than {MAX_CHARS // 1_000_000} million characters: probesim reads manifest and "
            "scenario files up to that size (split it)",
            file=shown,
        )
    return text


def read_text(path: str) -> tuple[str, str]:
    """The text of ``path`` (``-`` is standard input) and the name to show in messages."""
    if path == "-":
        return _bounded(sys.stdin.read(MAX_CHARS + 1), "<stdin>"), "<stdin>"
    p = Path(path)
    try:
        with p.open(encoding="utf-8") as f:  # bounded: /dev/zero or a FIFO that never ends
            return _bounded(f.read(MAX_CHARS + 1), path), path
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except IsADirectoryError:
        raise InputError("is a directory; give a YAML file", file=path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=path) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from None


def load_docs(text: str, file: str) -> Iterator[Doc]:
    """Every non-empty document of a YAML stream, in order; the first error is raised (a scenario,
    a config: one file that must be right whole)."""
    for d in read_documents(text, file):
        if isinstance(d, InputError):
            raise d
        yield d


# A document marker: "---" or "..." at the start of a line, alone or before a space. YAML forbids
# both there inside a document's content (a block scalar ends before them, a quoted one is an
# error), so they split a stream into its documents whatever the documents hold.
_MARKER = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)
_DIRECTIVES = re.compile(r"(?:^%[^\n]*\n)+\Z", re.MULTILINE)


def _chunks(text: str) -> list[tuple[int, int]]:
    """Where each document's text starts: (character offset, lines before it). A "---" starts a
    document (with the directives, "%YAML …", just above it); a "..." ends one, the next
    starting on the line after it."""
    out = [(0, 0)]
    line, at = 0, 0
    for m in _MARKER.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        if text.startswith("---", m.start()):
            start = m.start()
            d = _DIRECTIVES.search(text, out[-1][0], start)
            if d is not None:
                start = d.start()
            start_line = line - text.count("\n", start, m.start())
        else:
            nl = text.find("\n", m.start())
            if nl < 0:
                continue
            start, start_line = nl + 1, line + 1
        if start > out[-1][0]:
            out.append((start, start_line))
    return out


def read_documents(text: str, file: str) -> Iterator[Doc | InputError]:
    """Every non-empty document of a YAML stream, in order, or its error in its place: a
    duplicate key, a syntax error or an unreadable value is an error of its document, and every
    other document is still read, with its lines in the whole file.

    The stream is parsed whole (the fast path). A syntax error loses the parser's state: the
    rest is then parsed document by document (split at the markers), from the document after
    the last one read, each on its own, so each error is said at its own document."""
    sources = _helm_sources(text)
    read_upto = -1  # the line (0-based) where the last document read starts
    broken: InputError | None = None
    for d in _parse(text, file, 0, sources):
        if isinstance(d, _Broken):
            broken = d.error
            break
        if isinstance(d, Doc):
            read_upto = d.line - 1
        yield d
    if broken is None:
        return
    chunks = _chunks(text)
    first = 0 if read_upto < 0 else max(i for i, (_, ln) in enumerate(chunks) if ln <= read_upto) + 1
    said = False
    for i in range(first, len(chunks)):
        start, line = chunks[i]
        end = chunks[i + 1][0] if i + 1 < len(chunks) else len(text)
        for d in _parse(text[start:end], file, line, sources):
            said = said or isinstance(d, _Broken | InputError)
            yield d.error if isinstance(d, _Broken) else d
    if not said:  # the stream's error is no one document's (never lose it)
        yield broken


def _object_of(node: yaml.Node) -> str | None:
    """ "ConfigMap cfg": the kind and name of a document whose data could not be built, read off
    its node, to name it in the error."""
    if not isinstance(node, yaml.MappingNode):
        return None
    top = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    kind = top.get("kind")
    meta = top.get("metadata")
    name = None
    if isinstance(meta, yaml.MappingNode):
        name = next((v for k, v in meta.value if isinstance(k, yaml.ScalarNode) and k.value == "name"), None)
    if not isinstance(kind, yaml.ScalarNode) or not isinstance(kind.value, str) or not kind.value:
        return None
    named = isinstance(name, yaml.ScalarNode) and isinstance(name.value, str) and name.value
    return f"{kind.value} {name.value}" if named and name is not None else kind.value


@dataclass
class _Broken:
    """A syntax error: the parser's state is lost, the rest of its text unread."""

    error: InputError


def _parse(
    text: str, file: str, offset: int, sources: list[tuple[int, str]]
) -> Iterator[Doc | InputError | _Broken]:
    """The documents of ``text`` (which starts ``offset`` lines into ``file``): each Doc, or the
    InputError of a document whose node could not be read as data (the next documents are read
    on); a syntax error ends it (_Broken)."""
    previous_start = offset
    loader: Any = None
    try:
        loader = _Loader(text)
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            start = node.start_mark.line + 1 + offset
            b = _Builder(file, loader, offset)
            try:
                data = b.build(node, (), 0)
            except InputError as e:
                e.obj = e.obj or _object_of(node)
                yield e
                continue
            if data is None:
                continue
            src = None
            for ln, s in sources:
                if previous_start < ln <= start:
                    src = s
            previous_start = start
            yield Doc(file=file, data=data, line=start, lines=b.lines, source=src)
    except yaml.MarkedYAMLError as e:
        # A document parsed on its own ends where the next one's marker is: an error found at
        # its end ("unexpected end of stream") is said at its last line, not the marker's.
        last = offset + text.count("\n", 0, len(text) - 1) + 1
        mark = e.problem_mark or e.context_mark
        line = min(mark.line + 1 + offset, last) if mark else None
        problem = e.problem or e.context or "invalid YAML"
        if "nesting depth" in problem:  # libyaml's own limit, below ours
            problem = f"nesting deeper than {MAX_DEPTH} levels"
        elif e.problem and e.context and e.context_mark is not None:
            at = min(e.context_mark.line + 1 + offset, last)
            if at != line:  # where what was left open began
                problem += f" ({e.context} at line {at})"
        yield _Broken(InputError(f"YAML syntax error: {problem}", file=file, line=line))
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 + offset if isinstance(e.position, int) else None
        char = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        message = f"YAML syntax error: unacceptable character {char}: {e.reason}"
        yield _Broken(InputError(message, file=file, line=line))
    except yaml.YAMLError as e:
        yield _Broken(InputError(f"YAML error: {e}", file=file))
    except RecursionError:
        yield _Broken(InputError(f"nesting deeper than {MAX_DEPTH} levels", file=file))
    finally:
        if loader is not None:
            loader.dispose()
