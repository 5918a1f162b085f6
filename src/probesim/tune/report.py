"""What ``probesim tune`` prints: the Pareto front, the recommendation beside the current
setting, and the patches with the commands that apply them (or, for objects rendered by Helm,
where the values likely are)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from probesim.profiles import resolve
from probesim.safe import visible
from probesim.tune.figures import DETECTION_CAP_MS, Figures
from probesim.tune.inputs import TuneInputs
from probesim.tune.patch import kubectl_command, rule_patch, workload_patch, wrapped_command
from probesim.tune.space import FIELD_OF, Setting, Space
from probesim.tune.study import Outcome

FRONT_ROWS = 15


def probe_text(p: dict[str, Any] | None, readiness: bool) -> str:
    """A probe's timings in one cell: every 5s, timeout 1s, 3 failures (2 successes), after 10s."""
    if p is None:
        return "—"
    s = f"{p['periodSeconds']}s/{p['timeoutSeconds']}s ×{p['failureThreshold']}"
    if readiness:
        s += f" ✓{p['successThreshold']}"
    if p.get("initialDelaySeconds"):
        s += f" +{p['initialDelaySeconds']}s"
    return s


def outlier_text(od: dict[str, Any] | None) -> str:
    if od is None:
        return "off"
    parts = []
    if "consecutive5xxErrors" in od:
        parts.append(f"5xx×{od['consecutive5xxErrors']}")
    if "consecutiveGatewayErrors" in od:
        parts.append(f"gw×{od['consecutiveGatewayErrors']}")
    for key, label in (("interval", "every"), ("baseEjectionTime", "eject")):
        if key in od:
            parts.append(f"{label} {od[key]}")
    if "maxEjectionPercent" in od:
        parts.append(f"max {od['maxEjectionPercent']}%")
    return " ".join(parts) or "defaults"


def _removal(f: Figures) -> str:
    if not f.serves:
        return "— (no Service)"
    return f"{f.detection_s:g}s" if f.detected else f"never ≤{DETECTION_CAP_MS // 1000}s"


def _setting_cells(s: Setting, space: Space) -> list[str]:
    out = []
    names = space.containers()
    for kind, fname in FIELD_OF.items():
        parts = []
        for c in names:
            p = s.probes.get(c, {}).get(fname)
            text = probe_text(p, kind == "readiness")
            parts.append(text if len(names) == 1 else f"{c}: {text}")
        out.append("\n".join(parts))
    if space.rule is not None:
        out.append(outlier_text(s.outlier))
    return out


def render(o: Outcome, inputs: TuneInputs, out: Console) -> None:
    space = Space(inputs.workload, inputs.rule, inputs.added, inputs.app, inputs.handlers)
    out.print(
        Text.assemble(
            ("Tuning ", "bold"),
            (visible(f"{inputs.workload.kind}/{inputs.workload.name}"), "bold"),
            f" — study {o.study}: {o.trials} trials ({o.added} added now"
            + (", stopped by --timeout" if o.timed_out else "")
            + ")",
        )
    )
    out.print(
        "Objectives, each over the stress suite"
        + (" and the scenario" if inputs.given else "")
        + ": failed requests, needless restarts and readiness flaps; for a pod that hangs for good, how "
        "long it stays in "
        "service and how long until all replicas are Ready again (only a restart cures it); how long "
        "a new pod takes to be Ready once its app answers; probe requests per second per pod. "
        "Probe cells: period/timeout ×failures (✓successes) +initial delay.",
        highlight=False,
    )
    # What the figures assumed about each app (its profile: start, pause, health endpoints), as
    # probesim check says it: the slow-start and pause runs, and the probes added, come from it.
    raws = inputs.workload.model_dump(mode="json", by_alias=True, exclude_none=True)["spec"]["template"][
        "spec"
    ]
    for raw in raws["containers"]:
        assumed = resolve(inputs.workload.name, raw["name"], raw).line()
        out.print(Text(f"[{visible(raw['name'])}] assumed: {visible(assumed, 1000)}"))
    t = Table(title="Pareto front", title_justify="left", box=box.SIMPLE)
    heads = ["TRIAL", "FAILED", "RESTARTS", "HUNG POD OUT", "ALL BACK", "READY", "PROBES/S", "READINESS"]
    heads += ["LIVENESS", "STARTUP"]
    if space.rule is not None:
        heads.append("OUTLIER DETECTION")
    for h in heads:
        t.add_column(h, justify="right" if h in ("TRIAL", "FAILED", "RESTARTS", "PROBES/S") else "left")
    for r in ([o.current] if o.current_on_front else []) + o.front[:FRONT_ROWS]:
        chosen = r.number == (None if o.recommended is None else o.recommended.number)
        f = r.figures
        label = "current" if r.number is None else str(r.number)
        cells = [label + (" ◀" if chosen else ""), str(f.failed), str(f.restarts), _removal(f)]
        cells += [_secs(f.recovery_s), _secs(f.ready_s), f"{f.probe_rps:.3g}"]
        t.add_row(*cells, *_setting_cells(r.setting, space))
    out.print(t)
    if len(o.front) > FRONT_ROWS:
        out.print(f"({len(o.front) - FRONT_ROWS} more on the front; --json lists them all)", highlight=False)
    _compare(o, space, out)


def recommended_heading(trial: int | None, put_back: int) -> str:
    """The recommended column's heading: the trial it comes from, and, when values were put back
    after it, that the column shows those values, not the trial's own."""
    if not put_back:
        return f"RECOMMENDED (trial {trial})"
    values = "value" if put_back == 1 else "values"
    return f"RECOMMENDED (trial {trial}, then {put_back} {values} put back as listed below)"


def _compare(o: Outcome, space: Space, out: Console) -> None:
    rec = o.recommended
    t = Table(title="Current and recommended", title_justify="left", box=box.SIMPLE)
    t.add_column("")
    t.add_column("CURRENT", justify="right")
    if rec is not None:
        t.add_column(recommended_heading(rec.number, len(o.put_back)), justify="right")
    rows: list[tuple[str, str, str]] = []
    cf, rf = o.current.figures, (rec.figures if rec else None)
    # The user's own scenario first: what it does with the traffic the user described.
    for i, run in enumerate(cf.runs):
        if run.kind == "scenario":
            other = rf.runs[i] if rf else None
            mine = f"{run.failed} / {run.restarts} / {run.flaps}"
            theirs = f"{other.failed} / {other.restarts} / {other.flaps}" if other else ""
            rows.append(("your scenario: failed / restarts / flaps", mine, theirs))
    rows.append(("failed requests (all runs)", str(cf.failed), str(rf.failed) if rf else ""))
    if cf.ramp_failed or (rf is not None and rf.ramp_failed):
        rows.append(("  of which in start-up ramps", str(cf.ramp_failed), str(rf.ramp_failed) if rf else ""))
    rows.append(("needless restarts (all runs)", str(cf.restarts), str(rf.restarts) if rf else ""))
    rows.append(("hung pod out of service after", _removal(cf), _removal(rf) if rf else ""))
    rows.append(
        ("all replicas Ready again after the hang", _secs(cf.recovery_s), _secs(rf.recovery_s) if rf else "")
    )
    rows.append(("new pod Ready after its app answers", _secs(cf.ready_s), _secs(rf.ready_s) if rf else ""))
    rows.append(
        (
            "probe requests/s per pod (CPU)",
            f"{cf.probe_rps:.3g} ({cf.probe_cpu_m:g}m)",
            f"{rf.probe_rps:.3g} ({rf.probe_cpu_m:g}m)" if rf else "",
        )
    )
    rows.append(("readiness flaps after the ramp", str(cf.flaps), str(rf.flaps) if rf else ""))
    rows.append(("fewer Ready than replicas (no hang)", f"{cf.short_s:g}s", f"{rf.short_s:g}s" if rf else ""))
    for i, run in enumerate(cf.runs):
        if run.kind == "scenario":
            continue  # first, above
        other = rf.runs[i] if rf else None
        what = "failed / restarts" + (" (due)" if run.kind == "hung" else "")
        rows.append(
            (
                f"  {run.label}: {what}",
                f"{run.failed} / {run.restarts}",
                f"{other.failed} / {other.restarts}" if other else "",
            )
        )
    names = ["readiness", "liveness", "startup"] + (["outlier detection"] if space.rule else [])
    for name, a, b in zip(
        names,
        _setting_cells(o.current.setting, space),
        _setting_cells(rec.setting, space) if rec else [""] * len(names),
        strict=True,
    ):
        rows.append((name, a, b))
    for label, a, b in rows:
        t.add_row(label, a, *([b] if rec is not None else []))
    out.print(t)
    out.print(Text(("Chosen: " if rec else "") + o.why))
    if o.reasons:
        out.print(Text("Why each value (the figure that would be worse with it as it is now):"))
        for line in o.reasons:
            out.print(Text(f"  {visible(line, 1000)}"))
    if o.put_back:
        out.print(
            Text(
                "Put back as they are now, or as near as serves (the search changed them; with them "
                "no figure is materially worse, or it stays within its budget, under two seeds):"
            )
        )
        for line in o.put_back:
            out.print(Text(f"  {visible(line, 1000)}"))
    if o.handlers:
        out.print(Text("Also apply probesim check's fix for what no timing changes (the probes' handlers):",
                       style="yellow"))  # fmt: skip
        for line in o.handlers:
            out.print(Text(f"  {visible(line, 1000)}"))
    if o.worse:
        out.print(Text("Worse than the current setting on:", style="yellow"))
        for line in o.worse:
            out.print(Text(f"  {line}"))


@dataclass(frozen=True)
class PatchOut:
    kind: str  # Deployment, DestinationRule
    name: str
    namespace: str
    patch: dict[str, Any]
    strategic: bool

    def yaml(self) -> str:
        return yaml.safe_dump(self.patch, sort_keys=False)

    def command(self) -> str:
        return kubectl_command(self.kind, self.name, self.namespace, self.patch, self.strategic)


def patches(inputs: TuneInputs, current: Setting, setting: Setting) -> list[PatchOut]:
    w = inputs.workload
    out = []
    wp = workload_patch(w, current, setting)
    if wp is not None:
        out.append(PatchOut(w.kind, w.name, w.metadata.namespace, wp, True))
    if inputs.rule is not None:
        rp = rule_patch(current, setting)
        if rp is not None:
            r = inputs.rule
            out.append(PatchOut("DestinationRule", r.metadata.name, r.metadata.namespace, rp, False))
    return out


def render_patches(ps: list[PatchOut], inputs: TuneInputs, files: list[str], out: Console) -> None:
    """The patches (or the files they were written to) and how to apply them."""
    if not ps:
        return
    for i, p in enumerate(ps):
        how = "strategic-merge" if p.strategic else "JSON merge (a custom resource)"
        out.print(Text(f"\nPatch of {p.kind}/{visible(p.name)} ({how}):", style="bold"))
        if i < len(files):
            out.print(Text(f"written to {visible(files[i])}"))
        else:
            out.print(Text(p.yaml().rstrip()), highlight=False)
        if p.kind == "Pod":
            out.print("A Pod's probes cannot be changed in place: edit the manifest and recreate the Pod.")
        else:
            out.print(Text(wrapped_command(p.command())), highlight=False, soft_wrap=True)
    if inputs.source is not None:
        out.print(Text(f"\n{inputs.workload.name} was rendered by Helm from {visible(inputs.source)}: "
                       "a kubectl patch lasts until the next helm upgrade."))  # fmt: skip
        found = values_paths(inputs)
        if found:
            for probe, path, where in found:
                out.print(Text(f"  {probe}: likely the values at {path} ({where})"))
        else:
            out.print(
                "Set the same fields in the chart's values (probesim cannot see which values feed "
                "them: give the chart folder among the inputs to have it look)."
            )
    elif inputs.where:
        lines = _probe_lines(inputs, ps) or [inputs.where]
        out.print(Text("\nOr set the same fields in the manifest:"))
        for line in lines:
            out.print(Text(f"  {visible(line, 1000)}"))
    for p in ps:
        if p.kind == "StatefulSet":
            n = inputs.workload.spec.replicas
            name = visible(p.name)
            if n <= 1:
                out.print(Text(f"Applying it restarts {name}-0, the StatefulSet's only pod: an outage as "
                               "long as its start, so apply it in a window you choose."))  # fmt: skip
            else:
                out.print(Text(
                    f"Applying it rolls StatefulSet {name}: its pods are replaced one at a time, from the "
                    f"highest ordinal. To try it on one pod first, set spec.updateStrategy.rollingUpdate."
                    f"partition: {n - 1} (only pod {name}-{n - 1} is updated), watch it, then lower the "
                    "partition to 0."
                ))  # fmt: skip


def _probe_lines(inputs: TuneInputs, ps: list[PatchOut]) -> list[str]:
    """Where each probe the workload's patch changes is written (FILE:LINE, the probe's own line;
    a probe the patch adds: its container's)."""
    out: list[str] = []
    for p in ps:
        if not p.strategic:
            continue
        containers = p.patch.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
        for c in containers:
            own = next((x for x in inputs.workload.pod_spec.containers if x.name == c["name"]), None)
            for name in ("readinessProbe", "livenessProbe", "startupProbe"):
                if name in c and (c["name"], name) in inputs.probe_lines:
                    has = own is not None and own.probe(name.removesuffix("Probe")) is not None  # type: ignore[arg-type]
                    what = f"{c['name']} {name}" if has else f"container {c['name']}: add its {name}"
                    out.append(f"{inputs.probe_lines[(c['name'], name)]} ({what})")
    return list(dict.fromkeys(out))


_VALUES = re.compile(r"\.Values\.([A-Za-z0-9_.]+)")


def values_paths(inputs: TuneInputs) -> list[tuple[str, str, str]]:
    """Per probe field, the ``.Values`` path the chart's template puts there, when the template
    is on disk (a chart folder among the inputs, or the path the Source line names from here)."""
    source = inputs.source or ""
    rel = Path(*Path(source).parts[1:]) if len(Path(source).parts) > 1 else Path(source)
    candidates = [Path(source), *(Path(c) / rel for c in inputs.charts)]
    template = next((p for p in candidates if p.is_file()), None)
    if template is None:
        return []
    try:
        lines = template.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for fname in FIELD_OF.values():
        for i, line in enumerate(lines):
            if re.match(rf"\s*{fname}:", line) or (fname in line and ".Values" in line):
                for j in range(i, min(i + 4, len(lines))):
                    m = _VALUES.search(lines[j])
                    if m:
                        found.append((fname, m.group(1), f"{template}:{j + 1}"))
                        break
                break
    return found


def render_figures_note(f: Figures) -> str:
    return (
        f"{f.failed} failed, {f.restarts} restarts, hung pod out after {_removal(f)}, replicas back "
        f"after {_secs(f.recovery_s)}, Ready {_secs(f.ready_s)} after the app answers, "
        f"{f.probe_rps:.3g} probes/s per pod"
    )


def _secs(v: float) -> str:
    return f"never ≤{DETECTION_CAP_MS // 1000}s" if v >= DETECTION_CAP_MS / 1000 else f"{v:g}s"
