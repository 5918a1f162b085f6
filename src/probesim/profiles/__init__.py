"""App profiles: what a container is — its health endpoints per probe kind, its port's protocol,
its start range and worst pause — from the catalog of well-known images and frameworks
(``catalog.yaml``, each value with its source), the manifest's own hints, the user's corrections
(``.probesim.yaml`` → ``profiles``) and the scenario's behaviour. Every piece of advice says which
profile it assumed and on what evidence."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import Field

from probesim.model.base import Model, SBool
from probesim.model.duration import Duration, format_ms

__all__ = ["Membership", "Profile", "ProfileCorrection", "Resolved", "catalog", "image_repository", "resolve"]

Handler = dict[str, Any]
# What a family's replicas are to each other (catalog.yaml's header says each value).
Membership = Literal["quorum", "primary", "independent"]


class StartRange(Model):
    typical: Duration = Field(default=0, description="A start on a normally loaded node.")
    worst: Duration = Field(
        default=0, description="The slowest start to expect: cold node, CPU limit, many pods, recovery."
    )


class ExtraPaths(Model):
    """Paths a setting of the app adds on the port it serves (catalog.yaml: extraPaths)."""

    setting: str
    env: str = ""
    self_contained: tuple[str, ...] = ()


class ProfileVersion(Model):
    """Endpoints that replace a family's from a release on (catalog.yaml: versions)."""

    since: str
    liveness: Handler | None = None
    readiness: Handler | None = None
    startup: Handler | None = None
    self_contained: tuple[str, ...] = ()
    dependency_paths: tuple[str, ...] = ()


class Profile(Model):
    """One family of the catalog (catalog.yaml says what each field means)."""

    id: str
    name: str
    images: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    protocol: str = ""
    liveness: Handler | None = None
    readiness: Handler | None = None
    startup: Handler | None = None
    health_port: int | None = None
    health_port_env: str | None = None
    health_port_flags: tuple[str, ...] = ()
    flag_env: str = ""
    extra_paths: ExtraPaths | None = None
    versions: tuple[ProfileVersion, ...] = ()
    tcp_misses: str = ""
    self_contained: tuple[str, ...] = ()
    dependency_paths: tuple[str, ...] = ()
    start: StartRange = StartRange()
    slow_start: SBool = False
    pause: Duration = 0
    restart_cures: SBool = True
    serves: SBool = True
    membership: Membership = "independent"
    membership_when: str = ""
    scale_with: str = ""  # how the store adds and removes members, where its replicas are not interchangeable
    sources: dict[str, str] = Field(default_factory=dict)


class ProfileCorrection(Model):
    """A user's correction (``.probesim.yaml`` → ``profiles``): which containers it is for, and
    what to take instead of what probesim worked out. Every field but the selectors is optional."""

    workload: str | None = Field(default=None, description="The workload's name (all when omitted).")
    container: str | None = Field(default=None, description="The container's name (all when omitted).")
    image: str | None = Field(default=None, description="A regular expression searched in the image.")
    profile: str | None = Field(default=None, description="A catalog id (probesim check --list-profiles).")
    liveness: Handler | None = Field(default=None, description="The liveness handler, as in a manifest.")
    readiness: Handler | None = Field(default=None, description="The readiness handler, as in a manifest.")
    startup: Handler | None = Field(default=None, description="The startup handler, as in a manifest.")
    health_port: int | None = Field(default=None, ge=1, le=65535)
    self_contained: tuple[str, ...] | None = Field(
        default=None, description="Paths that check only the process."
    )
    start: StartRange | None = None
    pause: Duration | None = Field(default=None, description="The longest pause liveness must ride out.")
    restart_cures: SBool | None = None
    serves: SBool | None = None
    membership: Membership | None = Field(
        default=None,
        description="What its replicas are to each other: quorum, primary or independent.",
    )

    def matches(self, workload: str, container: str, image: str) -> bool:
        return (
            (self.workload is None or self.workload == workload)
            and (self.container is None or self.container == container)
            and (self.image is None or re.search(self.image, image) is not None)
        )


@cache
def catalog() -> dict[str, Profile]:
    """The catalog, by id (the last entry, ``generic``, is the unknown app's)."""
    text = resources.files("probesim.profiles").joinpath("catalog.yaml").read_text(encoding="utf-8")
    return {p.id: p for p in (Profile.model_validate(raw) for raw in yaml.safe_load(text))}


def image_repository(image: str) -> str:
    """The image without its tag or digest, lower case (``quay.io/prometheus/prometheus``)."""
    repo = image.split("@")[0].lower()
    last = repo.rsplit("/", 1)
    if ":" in last[-1]:
        last[-1] = last[-1].split(":")[0]
    return "/".join(last)


def _image_matches(pattern: str, repo: str) -> bool:
    if "/" in pattern:
        return re.search(pattern, repo) is not None
    last = _ARCH.sub("", repo.rsplit("/", 1)[-1])
    return re.fullmatch(pattern, last) is not None


_ARCH = re.compile(r"-(amd64|arm64|arm|ppc64le|s390x)$")  # per-architecture image names


@dataclass(frozen=True)
class Resolved:
    """The profile a container was given, the evidence for it, and what the scenario or the user
    changed of it."""

    profile: Profile
    evidence: tuple[str, ...]  # how it was chosen, in words: "image quay.io/prometheus/prometheus"
    start_ms: tuple[int, int]  # typical, worst
    pause_ms: int
    from_scenario: bool = False  # the start is the scenario's behaviour
    corrected: bool = False  # a .probesim.yaml correction applies

    @property
    def known(self) -> bool:
        return self.profile.id != "generic"

    @property
    def timed(self) -> bool:
        """Whether its start and pause say something: a catalog family's, or a .probesim.yaml
        correction's (an app probesim does not know, corrected, has the start it was given)."""
        return self.known or self.corrected

    def handler(self, kind: str, port: int | str) -> Handler | None:
        """The profile's handler for ``kind`` (startup: liveness's when it names none), with
        ``{port}`` replaced by ``port``; None when the app defines its own."""
        raw = getattr(self.profile, kind, None)
        if raw is None and kind == "startup":
            raw = self.profile.liveness
        return _fill(raw, port) if raw is not None else None

    def path_self_contained(self, path: str) -> bool:
        return path in self.profile.self_contained

    def path_reaches_dependency(self, path: str) -> bool:
        return path in self.profile.dependency_paths

    def to_json(self) -> dict[str, Any]:
        """What the advice assumed, as JSON and SARIF carry it."""
        p = self.profile
        return {
            "profile": p.id,
            "name": p.name,
            "evidence": list(self.evidence),
            "protocol": p.protocol or None,
            "endpoints": {k: getattr(p, k) for k in ("liveness", "readiness", "startup") if getattr(p, k)},
            "start": {"typical": format_ms(self.start_ms[0]), "worst": format_ms(self.start_ms[1])},
            "pause": format_ms(self.pause_ms),
            "corrected": self.corrected,
        }

    def line(self) -> str:
        """The assumption in one line, as text output shows it."""
        if not self.known:
            start = (
                f"starts in {format_ms(self.start_ms[1])} (scenario)"
                if self.from_scenario
                else "answers at once, no long pause"
            )
            where = ".probesim.yaml → profiles"
            return f"an app probesim does not know: no health path guessed, {start} ({where})"
        typical, worst = (format_ms(v) for v in self.start_ms)
        start = f"starts in {worst}" if self.from_scenario else f"starts in {typical} ({worst} at worst)"
        how = "; ".join(self.evidence)
        return f"{self.profile.name} ({how}): {start}, pauses up to {format_ms(self.pause_ms)}"


def _fill(value: Any, port: int | str) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, port) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, port) for v in value]
    if value == "{port}":
        return port
    if isinstance(value, str) and "{port}" in value:
        return value.replace("{port}", str(port))
    return value


def _probe_paths(raw: dict[str, Any]) -> list[str]:
    paths = []
    for kind in ("liveness", "readiness", "startup"):
        probe = raw.get(f"{kind}Probe")
        http = probe.get("httpGet") if isinstance(probe, dict) else None
        if isinstance(http, dict) and isinstance(http.get("path"), str):
            paths.append(http["path"])
    return paths


def _env_names(raw: dict[str, Any]) -> list[str]:
    env = raw.get("env")
    if not isinstance(env, list):
        return []
    return [str(e["name"]) for e in env if isinstance(e, dict) and "name" in e]


def _words(raw: dict[str, Any]) -> list[str]:
    """The programs a container's command runs, as evidence: the executable (the command's first
    word, else the args' first when the image's entrypoint is kept), past wrappers that run the
    rest (tini, env, gosu user, an entrypoint script); for a shell with ``-c``, the program word of
    each command in its script; for an interpreter, the module or script it runs (``python -m
    gunicorn``, ``python manage.py``). Nothing else — options, arguments, a script's comments and
    strings — is evidence."""
    return _programs([str(w) for w in (*_list(raw.get("command")), *_list(raw.get("args")))])


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# Shells whose -c script is read; wrappers that run the rest of their arguments (gosu and su-exec
# take a user first); words before a command in a script line that are not the program.
_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh", "busybox"})
_WRAPPERS = frozenset(
    {"exec", "env", "nohup", "time", "tini", "tini-static", "dumb-init", "catatonit", "docker-entrypoint.sh",
     "entrypoint.sh", "command", "bundle", "npx"}
)  # fmt: skip
_USER_WRAPPERS = frozenset({"gosu", "su-exec", "chpst"})
_PREFIXES = frozenset({"if", "then", "else", "elif", "while", "until", "do", "!", "{", "(", "time"})
_NOT_PROGRAMS = frozenset({"[", "[[", "]", "]]", "test", "fi", "done", "esac", "}", ")", ";;", "case", "for"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_PYTHON = re.compile(r"^python[0-9.]*$")
_SEPARATORS = re.compile(r"&&|\|\||[;|&]")


def _programs(argv: list[str]) -> list[str]:
    """The program words of one argv (a shell's script read line by line)."""
    words = list(argv)
    while words:
        name = words[0].rsplit("/", 1)[-1]
        if name in _WRAPPERS:
            words = words[1:]
        elif name in _USER_WRAPPERS:
            words = words[2:]
        else:
            break
        while words and (words[0].startswith("-") or _ASSIGNMENT.match(words[0])):  # tini --, env X=1
            words = words[1:]
    if not words:
        return []
    if words[0].startswith(("$", "`", "-")):
        return []  # a program named by a variable or a substitution, or the entrypoint's options
    name = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if name in _SHELLS:
        flag = next((i for i, w in enumerate(rest) if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", w)), None)
        if flag is None or flag + 1 >= len(rest):
            return [name]  # a script file: what it runs is not in the manifest
        return [name, *_script_programs(rest[flag + 1])]
    found = [name]
    args = [w for w in rest if not w.startswith("-")]
    if _PYTHON.match(name):
        module = next((rest[i + 1] for i, w in enumerate(rest[:-1]) if w == "-m"), None)
        target = module if module is not None else (args[0] if args else None)
        if target is not None:
            found.append(target.rsplit("/", 1)[-1])
    return found


def _script_programs(script: str) -> list[str]:
    """The program word of each command of a shell script (``_plain`` drops its here-documents,
    comments and quoted text first): lines joined where they end in a backslash, each split at
    ``;``, ``&&``, ``||``, ``|`` and ``&``; in each command, keywords (if, then, do, ...), variable
    assignments and ``exec`` are passed over and the first word left is the program (``[`` and
    ``test`` are none)."""
    found: list[str] = []
    for line in _plain(script).replace("\\\n", " ").splitlines():
        for part in _SEPARATORS.split(line):
            words = part.split()
            while words and (words[0] in _PREFIXES or _ASSIGNMENT.match(words[0])):
                if "=(" in words[0]:  # an array assignment: its words are its values
                    words = []
                words = words[1:]
            if words and words[0] not in _NOT_PROGRAMS:
                found += _programs(words)
    return found


_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?")  # not <<< (a here-string)


def _plain(script: str) -> str:
    """The script without what runs nothing: the body of each here-document, comments (``#`` at
    a word's start), and quoted text — a quoted word without blanks or separators keeps its
    content (``"$HOME/bin/app"``), any other quoted text becomes ``_``, one word that names no
    program. An unclosed quote drops the rest of the script."""
    lines: list[str] = []
    end: str | None = None
    for line in script.splitlines():
        if end is not None:
            end = None if line.strip() == end else end
            continue
        lines.append(line)
        heredoc = _HEREDOC.search(line)
        end = heredoc.group(1) if heredoc else None
    text, out, i = "\n".join(lines), [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            out.append(text[i : i + 2])
            i += 2
        elif c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if c == '"' and text[j] == "\\" else 1
            body = text[i + 1 : j]
            out.append(body if body and not re.search(r"[\s;&|#]", body) else "_")
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;&|("):
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _by_evidence(raw: dict[str, Any], image: str) -> tuple[Profile, str] | None:
    """The catalog entry the container's own evidence points to, strongest first: its image,
    then its probes' paths, its environment, its command."""
    entries = [p for p in catalog().values() if p.id != "generic"]
    repo = image_repository(image) if image else ""
    for p in entries:
        if repo and any(_image_matches(pat, repo) for pat in p.images):
            return p, f"image {image}"
    for path in _probe_paths(raw):
        for p in entries:
            if any(path.startswith(prefix) for prefix in p.paths):
                return p, f"probe path {path}"
    for name in _env_names(raw):
        for p in entries:
            if any(name.startswith(prefix) for prefix in p.env):
                return p, f"env {name}"
    words = _words(raw)
    for p in entries:
        hit = next((w for w in words if w in p.commands), None)
        if hit is not None:
            return p, f"command {hit}"
    return None


def resolve(
    workload: str,
    container: str,
    raw: dict[str, Any],
    corrections: tuple[ProfileCorrection, ...] = (),
    scenario_start_ms: int | None = None,
) -> Resolved:
    """The profile of one container: from the first correction that matches it (its ``profile``,
    then each field it gives), else from the evidence; the scenario's start, when given, is the
    start."""
    image = str(raw.get("image") or "")
    found = _by_evidence(raw, image)
    profile, evidence = found if found is not None else (catalog()["generic"], "")
    reasons = [evidence] if evidence else []
    corrected = False
    fixed: set[str] = set()  # the fields the user's correction gives: nothing below overrides them
    for c in corrections:
        if not c.matches(workload, container, image):
            continue
        corrected = True
        if c.profile is not None:
            profile = catalog()[c.profile]
            reasons = [f".probesim.yaml names {c.profile}"]
        changes = {
            k: v
            for k, v in c.model_dump(exclude={"workload", "container", "image", "profile"}).items()
            if v is not None
        }
        fixed = set(changes)
        if changes:
            profile = profile.model_copy(
                update={**changes, "start": c.start or profile.start, "pause": c.pause or profile.pause}
            )
            if c.profile is None:
                reasons.append(".probesim.yaml corrects " + ", ".join(_camel(k) for k in changes))
        break
    env = {
        str(e.get("name")): e.get("value")
        for e in (raw.get("env") or [])
        if isinstance(e, dict) and "name" in e
    }
    port_env = profile.health_port_env
    if port_env and str(env.get(port_env) or "").isdigit():
        profile = profile.model_copy(update={"health_port": int(str(env[port_env]))})
        reasons.append(f"env {port_env}={env[port_env]}")
    release = _release(profile, image)
    if release is not None:
        v, tag = release
        update: dict[str, Any] = {
            k: getattr(v, k) for k in ("liveness", "readiness", "startup") if getattr(v, k) and k not in fixed
        }
        for k in ("self_contained", "dependency_paths"):  # the older paths are still served
            if k in fixed:
                continue
            update[k] = tuple(dict.fromkeys((*getattr(profile, k), *getattr(v, k))))
        profile = profile.model_copy(update=update)
        paths = [
            h["httpGet"].get("path") for h in (v.liveness, v.readiness, v.startup) if h and "httpGet" in h
        ]
        reasons.append(f"release {tag}: {', '.join(dict.fromkeys(str(p) for p in paths))} (from {v.since})")
    flagged = _flag_port(profile, raw, env) if "health_port" not in fixed else None
    if flagged is not None:
        profile = profile.model_copy(update={"health_port": flagged[1]})
        reasons.append(f"{flagged[0]} port {flagged[1]}")
    extra = profile.extra_paths
    if extra is not None and _setting_on(extra, raw, env):
        profile = profile.model_copy(
            update={"self_contained": (*profile.self_contained, *extra.self_contained)}
        )
        reasons.append(f"{extra.setting} serves {', '.join(extra.self_contained)}")
    start = (profile.start.typical, profile.start.worst)
    if scenario_start_ms is not None:
        start = (scenario_start_ms, scenario_start_ms)
    return Resolved(
        profile,
        tuple(reasons),
        start,
        profile.pause,
        from_scenario=scenario_start_ms is not None,
        corrected=corrected,
    )


_TAG_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def _version(text: str) -> tuple[int, ...] | None:
    m = _TAG_VERSION.match(text)
    return tuple(int(x) for x in m.groups()) if m else None


def _release(profile: Profile, image: str) -> tuple[ProfileVersion, str] | None:
    """The last of the profile's versioned endpoints whose release the image's tag reaches, and
    the tag; None when the tag names no version (``latest``) or none is reached."""
    last = image.split("@")[0].rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    have = _version(tag)
    if have is None:
        return None
    reached = [v for v in profile.versions if (since := _version(v.since)) is not None and have >= since]
    return (reached[-1], tag) if reached else None


_URL = re.compile(r"^[a-z][a-z0-9+.-]*://(\[[^\]]*\]|[^:/,]*)(?::(\d+))?", re.IGNORECASE)
_LOOPBACK = ("127.", "localhost", "[::1]")


def _flag_values(raw: dict[str, Any], flag: str, env: dict[str, Any], flag_env: str) -> list[str] | None:
    """The values of ``flag`` in the container's command and args (``--f=v`` or ``--f v``, also
    inside a ``sh -c`` string), else in its environment (``flag_env`` + the flag's name); None
    when it is not given."""
    words: list[str] = []
    for key in ("command", "args"):
        part = raw.get(key)
        if isinstance(part, list):
            for w in part:
                words += str(w).split()
    values = [w.split("=", 1)[1] for w in words if w.startswith(flag + "=")]
    values += [words[i + 1] for i, w in enumerate(words[:-1]) if w == flag]
    if not values and flag_env:
        name = flag_env + flag.lstrip("-").upper().replace("-", "_")
        if env.get(name) is not None:
            values = [str(env[name])]
    return values or None


def _flag_port(profile: Profile, raw: dict[str, Any], env: dict[str, Any]) -> tuple[str, int] | None:
    """The first of the profile's health-port flags the container gives, and the port of its first
    URL the kubelet can reach (not a loopback address: an httpGet goes to the pod's IP), plain
    http before https (an httpGet is plain unless its scheme says otherwise)."""
    found: list[tuple[bool, str, int]] = []
    for flag in profile.health_port_flags:
        values = _flag_values(raw, flag, env, profile.flag_env)
        for url in (u.strip(" '\"") for v in values or [] for u in v.split(",")):
            m = _URL.match(url)
            if m is None or m.group(2) is None or m.group(1).lower().startswith(_LOOPBACK):
                continue
            found.append((url.lower().startswith("https"), flag, int(m.group(2))))
    plain = [f for f in found if not f[0]]
    return (plain or found)[0][1:] if found else None


def _setting_on(extra: ExtraPaths, raw: dict[str, Any], env: dict[str, Any]) -> bool:
    """The setting is on: its environment variable is true, or its name is set to true in any
    value of the environment (SPRING_APPLICATION_JSON) or in the args (``--setting=true``)."""
    if extra.env and str(env.get(extra.env, "")).strip().lower() == "true":
        return True
    texts = [str(v) for v in env.values() if v is not None]
    for key in ("command", "args"):
        part = raw.get(key)
        if isinstance(part, list):
            texts += [str(w) for w in part]
    pattern = re.compile(re.escape(extra.setting) + r"[\"']?\s*[:=]\s*[\"']?true\b", re.IGNORECASE)
    return any(pattern.search(t) for t in texts)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)
