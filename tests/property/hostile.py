"""Hostile scenario and manifest text for ``probesim run`` and ``probesim check`` (issue 17).

One generator, used by the CI fuzz test (tests/property/test_fuzz_cli.py, through hypothesis's
``st.randoms()``) and by scripts/fuzz_inputs.py (thousands of inputs as real processes, through
``random.Random(seed)``). A case starts from a built-in scenario (with its manifest files) or
from a small Deployment + Service, and is mutated: as data (wrong types, missing and extra
fields, huge / negative / NaN / infinite numbers, control and bidi characters, rich markup and
emoji codes in names, huge replica counts and durations, many items) and as text (alias bombs,
duplicate keys, deep nesting, YAML tags, binary junk, many documents, truncation).

``profile="ci"`` keeps every run that is not refused up front short (durations of seconds,
replica counts either small or far over the cost limit); ``profile="full"`` also tries the
counts and durations in between, where a run is allowed but long.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

import probesim.scenarios as _scenarios

Profile = Literal["ci", "full"]
FORMATS = ("text", "json", "sarif", "junit")
BUILTIN_DIR = Path(_scenarios.__file__).parent
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

SMALL_MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: nginx
          ports: [{name: http, containerPort: 8080}]
          resources: {requests: {cpu: 100m}, limits: {cpu: "1"}}
          startupProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 2, failureThreshold: 30}
          readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5, timeoutSeconds: 1}
          livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 10, failureThreshold: 3}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""

SMALL_SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: small, description: a small Deployment and its Service}
manifests: [m.yaml]
spec:
  duration: 30s
  step: 100ms
  seed: 1
  behavior:
    web:
      containers:
        app:
          start: 5s
          routes: {/: {cpu: 2ms}}
          episodes: [{kind: hang, at: 10s, for: 3s}]
  actions: [{kind: deletePod, pod: web-0, at: 12s}]
  traffic:
    - {path: /, rate: 20, start: 2s}
"""

# ---------------------------------------------------------------------------------------------
# Value pools


NUMBERS: tuple[Any, ...] = (
    0, -1, 1, -(2**31), 2**31 - 1, 2**31, 2**53 + 1, 2**63, 2**64, 10**100, -(10**100),
    0.5, -0.5, 1e-300, 5e-324, 1e308, -1e308, float("inf"), float("-inf"), "nan",
    True, False, "1", "0x10", "1e3", "  7 ", "١٢",
)  # fmt: skip
HUGE_COUNTS: tuple[int, ...] = (2**31 - 1, 2**31, 10**9, 10**7, 2**63)
MODERATE_COUNTS: tuple[int, ...] = (1000, 5000, 20_000, 100_000, 1_000_000)
COUNT_KEYS = frozenset(
    {"replicas", "minReplicas", "maxReplicas", "failureThreshold", "successThreshold", "periodSeconds",
     "timeoutSeconds", "initialDelaySeconds", "terminationGracePeriodSeconds", "clients", "maxVUs",
     "preAllocatedVUs", "rate", "startRate", "target", "workers", "queue", "attempts", "percent",
     "consecutive5xxErrors", "maxEjectionPercent", "containerPort", "port", "ordinals", "seed"}
)  # fmt: skip
DURATION_KEYS = frozenset(
    {"duration", "step", "start", "stop", "at", "for", "timeout", "latency", "shutdown", "cpu",
     "backoff", "delay", "interval", "baseEjectionTime", "gracefulStop", "endpointDelay", "warmUp"}
)  # fmt: skip
HOSTILE_DURATIONS: tuple[Any, ...] = (
    "0s", "-1s", "1ms", "1us", "0.0001ms", "8784h", "8785h", "99999999h", "1e9s", "1.5.5s", "1h" * 300,
    "9" * 4000 + "s", "9" * 4096, "1" * 5000, "10", 10, -5, 1.5, "inf", "nanms", "١٠s", "1m30",
    "P1D", "", " ", "10s\x00", "10 s", "1h1m1s1ms1us", "0.000000001h", None, [], {},
)  # fmt: skip
LONG_HOSTILE_DURATIONS: tuple[str, ...] = ("24h", "8784h", "1000h")
NAMES: tuple[str, ...] = (
    "[/]", "[bold]x[/bold]", ":100:", "x:100:y", "\x1b[31mred\x1b[0m", "a\u202eb", "\u202e", "\x00",
    "a\x07b", "\u200b", "\ufeff", "😀", "日本", "-", "a-", "-a", "A", "web.v1", "a" * 63, "a" * 64,
    "a" * 253, "a" * 254, "a" * 5000, "web\n", "web\r\nx", "../../etc/passwd", "$(id)", "%s%n%x",
    "{{ .Values.name }}", "<script>", "]]>", "&amp;", "'\"", "\\", "web\tx", "web x", "",
)  # fmt: skip
TEXTS: tuple[str, ...] = (*NAMES, "/", "/healthz", "http", "TCP", "Always", "true", "null", "~")
EXTRA_KEYS: tuple[str, ...] = (
    "unknownField", "x[/]", ":100:", "", "\x1b", "<<", "on", "yes", "null", "1", "k" * 5000, "spec",
)  # fmt: skip
KINDS: tuple[str, ...] = (
    "Deployment", "StatefulSet", "ReplicaSet", "Pod", "DaemonSet", "Job", "CronJob", "Service",
    "ReplicationController", "HorizontalPodAutoscaler", "List", "DeploymentList", "Namespace",
    "DestinationRule", "VirtualService", "Scenario", "Kustomization", "", "[/]", "deployment",
)  # fmt: skip
ALIAS_BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]" for i in range(1, 10)]
)
YAML_TAGS: tuple[str, ...] = (
    "!!python/object/apply:os.system ['echo pwned']", "!!python/name:os.system", "!!binary aGVsbG8=",
    "!!set {a, b}", "!!timestamp 2001-12-14t21:59:43.10-05:00", "!!float .nan", "!!float -.inf",
    "!!int 0x7fffffffffffffffffff", "!!str 10s", "!!map {a: 1}", "!!seq [1]", "!foo bar", "!!null ''",
    "2001-12-14", "0o777", "0b1010", "1_000", "=", "<<: {x: 1}",
)  # fmt: skip
JUNK: tuple[bytes, ...] = (
    b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\x80\x81", b"\xc3\x28", b"\xed\xa0\x80", b"\r", b"\t",
    b"\x1b[2J", b"\xe2\x80\xae", b"\x0b\x0c", b"\x85", b"%", b"@", b"`", b"&", b"*", b"!", b"|", b">",
    b"{", b"}", b"[", b"]", b"---", b"...", b"\n---\n", b"? ", b": ", b"- ", b"#", b"'", b'"',
)  # fmt: skip
CSV_LINES: tuple[str, ...] = (
    "seconds,rate", "0,5", "10,20", "5,10", "0,inf", "0,nan", "-1,5", "1e300,1", "10,2e9", "x,y", "1",
    "1,2,3", "", "# comment", "0,-5", "nan,nan", "3600,1e9", "1e-300,1", "0x10,1", "1_0,2", "١,٢",
)  # fmt: skip


@dataclass
class Case:
    """One hostile input: files to write in a fresh folder, and what to run on them."""

    base: str
    files: dict[str, bytes]
    scenario: str  # the scenario file (run; check --scenario)
    manifests: list[str]  # files check reads (may be empty: then check --scenario only)
    mutations: list[str] = field(default_factory=list)
    run_json: bool = False
    check_with_scenario: bool = False
    stress: bool = False
    fmt: str = "text"

    def write(self, root: Path) -> None:
        for name, data in self.files.items():
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)

    def run_args(self, root: Path) -> list[str]:
        return ["run", str(root / self.scenario), *(["--json"] if self.run_json else [])]

    def check_args(self, root: Path, fmt: str | None = None) -> list[str]:
        args = ["check", *(str(root / m) for m in self.manifests), "--format", fmt or self.fmt]
        if self.check_with_scenario or not self.manifests:
            args += ["--scenario", str(root / self.scenario)]
        if self.stress:
            args.append("--stress")
        return args


# ---------------------------------------------------------------------------------------------
# Bases


def _bases() -> list[tuple[str, dict[str, str], str, list[str]]]:
    """(name, files, scenario file, manifest files) of each starting point."""
    out = [("small", {"s.yaml": SMALL_SCENARIO, "m.yaml": SMALL_MANIFEST}, "s.yaml", ["m.yaml"])]
    for p in sorted(BUILTIN_DIR.glob("*.yaml")):
        text = p.read_text()
        files = {"s.yaml": text}
        named = []
        head = next(
            d
            for d in list(yaml.load_all(text, Loader=_LOADER))
            if isinstance(d, dict) and d.get("kind") == "Scenario"
        )
        for entry in head.get("manifests", []):
            if isinstance(entry, str):
                files[entry] = (BUILTIN_DIR / entry).read_text()
                named.append(entry)
        out.append((p.stem, files, "s.yaml", named))
    return out


BASES = _bases()

# ---------------------------------------------------------------------------------------------
# Data mutations


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in plain data (keys and indices), the root first."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths_of(v, (*prefix, i))
    return out


def _set(docs: list[Any], path: tuple[Any, ...], value: Any) -> None:
    node = docs
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _junk_value(rnd: random.Random) -> Any:
    return rnd.choice(
        [[], {}, "x", True, None, 0, [1, 2], {"a": 1}, "10s", 1.5, [[[]]], {"name": "x"}, [None], "{}"]
    )


def _name_paths(paths: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [p for p in paths if p and p[-1] in ("name", "pod", "service", "dependency", "path", "host")]


def mutate_data(rnd: random.Random, docs: list[Any], profile: Profile) -> list[str]:
    """Mutate the documents in place, 1 to 4 times; the names of what was done."""
    done = []
    for _ in range(rnd.randint(1, 4)):
        paths = [p for p in paths_of(docs) if len(p) > 1]
        if not paths:
            break
        kind = rnd.choice(
            ["type", "delete", "extra", "number", "text", "name", "duration", "count", "kind", "many",
             "dict-key", "unicode-key"]
        )  # fmt: skip
        path = rnd.choice(paths)
        try:
            if kind == "type":
                _set(docs, path, _junk_value(rnd))
            elif kind == "delete":
                parent: Any = docs
                for p in path[:-1]:
                    parent = parent[p]
                del parent[path[-1]]
            elif kind in ("extra", "dict-key", "unicode-key"):
                dicts = [p for p in paths if isinstance(_get(docs, p), dict)]
                if not dicts:
                    continue
                target = _get(docs, rnd.choice(dicts))
                key = rnd.choice(EXTRA_KEYS) if kind != "unicode-key" else rnd.choice(NAMES)
                target[key] = rnd.choice([1, "x", None, {"a": [1]}, rnd.choice(NAMES)])
            elif kind == "number":
                _set(docs, path, rnd.choice(NUMBERS))
            elif kind == "text":
                _set(docs, path, rnd.choice(TEXTS))
            elif kind == "name":
                names = _name_paths(paths)
                if not names:
                    continue
                _set(docs, rnd.choice(names), rnd.choice(NAMES))
            elif kind == "duration":
                durs = [p for p in paths if p[-1] in DURATION_KEYS] or paths
                pool = HOSTILE_DURATIONS + (LONG_HOSTILE_DURATIONS if profile == "full" else ())
                _set(docs, rnd.choice(durs), rnd.choice(pool))
            elif kind == "count":
                counts = [p for p in paths if p[-1] in COUNT_KEYS] or paths
                pool = HUGE_COUNTS + (MODERATE_COUNTS if profile == "full" else ()) + (-1, 0)
                _set(docs, rnd.choice(counts), rnd.choice(pool))
            elif kind == "kind":
                kinds = [p for p in paths if p[-1] in ("kind", "apiVersion")]
                if not kinds:
                    continue
                p = rnd.choice(kinds)
                _set(
                    docs, p, rnd.choice(KINDS) if p[-1] == "kind" else rnd.choice(["v1", "apps/v2", "", "x"])
                )
            elif kind == "many":
                lists = [p for p in paths if isinstance(_get(docs, p), list) and _get(docs, p)]
                if not lists:
                    continue
                p = rnd.choice(lists)
                items = _get(docs, p)
                n = rnd.choice([50, 500, 5000] if profile == "full" else [10, 60])
                _set(docs, p, [items[i % len(items)] for i in range(n)])
        except (IndexError, KeyError, TypeError):
            continue  # an earlier mutation replaced part of the path
        done.append(kind)
    return done


def _get(docs: Any, path: tuple[Any, ...]) -> Any:
    node = docs
    for p in path:
        node = node[p]
    return node


# ---------------------------------------------------------------------------------------------
# Text mutations


def _line_starts(text: bytes) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(text) if c == 0x0A]


def mutate_text(rnd: random.Random, text: bytes, profile: Profile) -> tuple[bytes, str]:
    kind = rnd.choice(
        ["alias-bomb", "dup-key", "junk", "many-docs", "truncate", "deep", "tag", "long-line",
         "encoding", "empty", "merge", "tabs", "repeat"]
    )  # fmt: skip
    lines = text.split(b"\n")
    i = rnd.randrange(len(lines))
    if kind == "alias-bomb":
        bomb = ALIAS_BOMB.encode()
        return (text + b"\n---\n" + bomb + b"\n") if rnd.random() < 0.5 else (bomb + b"\n---\n" + text), kind
    if kind == "dup-key":
        keyed = [n for n, line in enumerate(lines) if b": " in line or line.rstrip().endswith(b":")]
        if keyed:
            n = rnd.choice(keyed)
            lines.insert(n + 1, lines[n].split(b":")[0] + b": " + rnd.choice([b"1", b"x", b"{}", b"[]"]))
        return b"\n".join(lines), kind
    if kind == "junk":
        out = bytearray(text)
        for _ in range(rnd.randint(1, 8)):
            pos = rnd.randint(0, len(out))
            chunk = rnd.choice(JUNK) if rnd.random() < 0.7 else bytes(rnd.getrandbits(8) for _ in range(16))
            out[pos:pos] = chunk
        return bytes(out), kind
    if kind == "many-docs":
        n = rnd.choice([100, 1000, 20_000] if profile == "full" else [100, 2000])
        filler = rnd.choice([b"---\n", b"---\n{}\n", b"---\nnull\n", b"---\n- 1\n", b"---\nkind: Secret\n"])
        return text + b"\n" + filler * n, kind
    if kind == "truncate":
        return text[: rnd.randint(0, len(text))], kind
    if kind == "deep":
        n = rnd.choice([63, 65, 200, 5000, 100_000] if profile == "full" else [63, 65, 500, 20_000])
        opener, closer = rnd.choice([(b"[", b"]"), (b"{a: ", b"}"), (b"- ", b"")])
        if opener == b"- ":
            nest = b"\n".join(b"  " * k + b"- " for k in range(min(n, 3000))) + b"x"
            return text + b"\n---\n" + nest + b"\n", kind
        lines[i] = lines[i].split(b":")[0] + b": " + opener * n + b"1" + closer * n
        return b"\n".join(lines), kind
    if kind == "tag":
        keyed = [n for n, line in enumerate(lines) if b": " in line]
        if keyed:
            n = rnd.choice(keyed)
            lines[n] = lines[n].split(b": ")[0] + b": " + rnd.choice(YAML_TAGS).encode()
        return b"\n".join(lines), kind
    if kind == "long-line":
        size = rnd.choice([5000, 100_000, 3_000_000] if profile == "full" else [5000, 100_000])
        keyed = [n for n, line in enumerate(lines) if b": " in line]
        if keyed:
            n = rnd.choice(keyed)
            lines[n] = lines[n].split(b": ")[0] + b": " + rnd.choice([b"9", b"a", b"[/]", b"\\x1b"]) * size
        return b"\n".join(lines), kind
    if kind == "encoding":
        encoding = rnd.choice(["utf-16", "utf-32", "latin-1", "utf-8-sig", "cp1252"])
        return text.decode("utf-8", "replace").encode(encoding, "replace"), kind
    if kind == "empty":
        return rnd.choice(
            [b"", b"\n", b"# nothing\n", b"null\n", b"[]\n", b"42\n", b"---\n", b"\x00", b"\xff"]
        ), kind
    if kind == "merge":
        return b"base: &b {name: x}\n" + text.replace(b"metadata:", b"metadata:\n  <<: *b\n ", 1), kind
    if kind == "tabs":
        return text.replace(b"  ", b"\t", rnd.randint(1, 5)), kind
    # repeat: the whole file again (duplicate objects and Scenario documents)
    return text + b"\n---\n" + text, kind


# ---------------------------------------------------------------------------------------------
# Cases


def _dump(rnd: random.Random, docs: list[Any]) -> bytes:
    style = rnd.random()
    try:
        if style < 0.15:
            # JSON is YAML; NaN and Infinity are not JSON but are written as such by json.dumps
            return "\n---\n".join(json.dumps(d) for d in docs).encode()
        return yaml.dump_all(
            docs, Dumper=_DUMPER, sort_keys=False, allow_unicode=style < 0.6, default_flow_style=style < 0.3
        ).encode("utf-8", "surrogatepass")
    except (yaml.YAMLError, ValueError, RecursionError, UnicodeError):
        return b"\n---\n".join(repr(d).encode("utf-8", "replace") for d in docs)


def _shorten(docs: list[Any]) -> None:
    """CI: a scenario simulates a few seconds (mutations may lengthen it again)."""
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "Scenario" and isinstance(d.get("spec"), dict):
            d["spec"]["duration"] = "10s"


def make_case(rnd: random.Random, profile: Profile = "ci") -> Case:
    """One hostile case, all of its randomness from ``rnd``."""
    name, texts, scenario, named = rnd.choice(BASES)
    files = {k: v.encode() for k, v in texts.items()}
    case = Case(name, files, scenario, list(named))
    if not named or rnd.random() < 0.3:
        case.check_with_scenario = True
    case.run_json = rnd.random() < 0.4
    case.fmt = rnd.choice(FORMATS)
    case.stress = profile == "full" and rnd.random() < 0.05
    if profile == "ci":
        docs = list(yaml.load_all(files[scenario], Loader=_LOADER))
        _shorten(docs)
        files[scenario] = yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False).encode()
    # Extras: a series CSV, hostile manifest paths.
    if rnd.random() < 0.1:
        csv = "\n".join(rnd.choice(CSV_LINES) for _ in range(rnd.randint(0, 12))).encode()
        if rnd.random() < 0.2:
            csv += bytes(rnd.choice(JUNK))
        files["series.csv"] = csv
        docs = list(yaml.load_all(files[scenario], Loader=_LOADER))
        for d in docs:
            if isinstance(d, dict) and d.get("kind") == "Scenario":
                d["spec"]["traffic"] = [{"series": "series.csv", "path": "/"}]
        files[scenario] = yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False).encode()
        case.mutations.append("series")
    if rnd.random() < 0.05:
        bad = rnd.choice(["/dev/zero", "/dev/urandom", ".", "missing.yaml", "/", "a" * 5000, "m.yaml\x00x"])
        docs = list(yaml.load_all(files[scenario], Loader=_LOADER))
        for d in docs:
            if isinstance(d, dict) and d.get("kind") == "Scenario":
                d["manifests"] = [*(d.get("manifests") or []), bad]
        files[scenario] = yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False).encode()
        case.mutations.append("manifest-path")
    # Mutate one or two of the YAML files, as data then as text.
    targets = [f for f in files if f.endswith(".yaml")]
    for target in rnd.sample(targets, k=min(len(targets), rnd.choice([1, 1, 2]))):
        if rnd.random() < 0.75:
            try:
                docs = list(yaml.load_all(files[target], Loader=_LOADER))
            except yaml.YAMLError:
                docs = []
            if docs:
                case.mutations += [f"{target}:{m}" for m in mutate_data(rnd, docs, profile)]
                files[target] = _dump(rnd, docs)
        if rnd.random() < 0.45 or not case.mutations:
            files[target], kind = mutate_text(rnd, files[target], profile)
            case.mutations.append(f"{target}:{kind}")
    return case
