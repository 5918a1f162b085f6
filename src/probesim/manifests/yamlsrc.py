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
    def __init__(self, file: str, loader: yaml.SafeLoader) -> None:
        self.file = file
        self.loader = loader
        self.count = 0
        self.lines: dict[Path_, int] = {}

    def build(self, node: yaml.Node, path: Path_, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise InputError(
                f"document expands to more than {MAX_NODES} values (an alias bomb?)",
                file=self.file,
                line=node.start_mark.line + 1,
            )
        if depth > MAX_DEPTH:
            raise InputError(
                f"nesting deeper than {MAX_DEPTH} levels", file=self.file, line=node.start_mark.line + 1
            )
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            out = []
            for i, item in enumerate(node.value):
                self.lines.setdefault((*path, i), item.start_mark.line + 1)
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
                line=node.start_mark.line + 1,
            ) from None
        if isinstance(value, datetime.date | datetime.datetime):
            return node.value  # Kubernetes reads timestamps as strings
        if isinstance(value, bytes):
            raise InputError("binary values are not supported", file=self.file, line=node.start_mark.line + 1)
        return value

    def _mapping(self, node: yaml.MappingNode, path: Path_, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merges: list[dict[str, Any]] = []
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
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
                raise InputError(f'duplicate key "{shown}"', file=self.file, line=line)
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
    """Every non-empty document of a YAML stream, in order."""
    sources = _helm_sources(text)
    loader = _Loader(text)
    previous_start = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            start = node.start_mark.line + 1
            b = _Builder(file, loader)
            data = b.build(node, (), 0)
            if data is None:
                continue
            src = None
            for ln, s in sources:
                if previous_start < ln <= start:
                    src = s
            previous_start = start
            yield Doc(file=file, data=data, line=start, lines=b.lines, source=src)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        problem = e.problem or e.context or "invalid YAML"
        if "nesting depth" in problem:  # libyaml's own limit, below ours
            problem = f"nesting deeper than {MAX_DEPTH} levels"
        raise InputError(f"YAML syntax error: {problem}", file=file, line=line) from None
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        char = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        raise InputError(
            f"YAML syntax error: unacceptable character {char}: {e.reason}",
            file=file,
            line=line,
        ) from None
    except yaml.YAMLError as e:
        raise InputError(f"YAML error: {e}", file=file) from None
    except RecursionError:
        raise InputError(f"nesting deeper than {MAX_DEPTH} levels", file=file) from None
    finally:
        loader.dispose()
