"""Hostile input at the command line (issue 17): every bad file, name or output path ends in
one clean line on stderr, ``error: file:line: object: field: message``, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app

runner = CliRunner()
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: 10 MB values in a blink

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app"}]}},
    },
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def write_scenario(tmp: Path, spec: dict[str, object], manifests: list[object] | None = None) -> Path:
    doc = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "manifests": manifests if manifests is not None else [DEPLOY, SERVICE],
        "spec": {"duration": "20s", **spec},
    }
    p = tmp / "s.yaml"
    p.write_text(yaml.dump(doc, Dumper=DUMPER, sort_keys=False))
    return p


def fails_cleanly(args: list[str], expected: str) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith("error: "), r.output
    assert expected in lines[0], r.output
    return lines[0]


@pytest.mark.parametrize(
    ("csv", "expected"),
    [
        (b"seconds,rate\n0,5\n10,inf\n", "series.csv:3: seconds and rate must be finite"),
        (b"seconds,rate\n0,5\n10,nan\n", "series.csv:3: seconds and rate must be finite"),
        (b"inf,5\n", "series.csv:1: seconds and rate must be finite"),
        (b"seconds,rate\n0,5\n\n10,\xff\xfe\n", "series.csv:4: not UTF-8 text"),
        (b"0,5\n10,2e9\n", "series.csv:2: seconds must be 0 to"),
        (b"0,5\n1e300,1\n", "series.csv:2: seconds must be 0 to"),
    ],
)
def test_a_bad_series_csv_names_its_file_and_line(tmp_path: Path, csv: bytes, expected: str) -> None:
    (tmp_path / "series.csv").write_bytes(csv)
    s = write_scenario(tmp_path, {"traffic": [{"series": "series.csv"}]})
    fails_cleanly(["run", str(s)], expected)


def test_a_route_calling_an_undefined_dependency_is_named_at_load(tmp_path: Path) -> None:
    routes = {"/": {"calls": [{"dependency": "db"}, {"dependency": "dbx"}]}}
    s = write_scenario(
        tmp_path,
        {
            "dependencies": {"db": {}, "cache": {}},
            "behavior": {"web": {"containers": {"app": {"routes": routes}}}},
            "traffic": [{"rate": 5}],
        },
    )
    line = fails_cleanly(["run", str(s)], "spec.behavior.web.containers.app.routes./.calls[1].dependency")
    assert "route '/' calls dependency 'dbx'" in line
    assert "(defined: 'db', 'cache')" in line


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        ("[/]", "error: [/]: no such file"),
        ("[bold]x[/bold]", "error: [bold]x[/bold]: no such file"),
        ("x.yaml:100:", "error: x.yaml:100:: no such file"),
        ("a\x1b[31mred\u202e", "error: a\\x1b[31mred\\u202e: no such file"),
        ("a" * 100_000, "error: " + "a" * 199 + "…: no such file"),
    ],
)
def test_user_text_in_an_error_is_text_not_markup_emoji_or_escapes(target: str, shown: str) -> None:
    line = fails_cleanly(["run", target], shown)
    assert "\x1b" not in line and "\u202e" not in line and "\U0001f4af" not in line
    assert len(line) < 2000


def test_names_in_the_tables_are_text(tmp_path: Path) -> None:
    deploy = yaml.safe_load(yaml.safe_dump(DEPLOY))
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"] = {"httpGet": {"path": "/[/]:100:\x1b", "port": 80}}
    s = write_scenario(
        tmp_path,
        {
            "behavior": {"web": {"containers": {"app": {"start": "5s"}}}},
            "traffic": [{"rate": 1, "name": "[/]x" * 1000}],
        },
        manifests=[deploy, SERVICE],
    )
    doc = yaml.safe_load(s.read_text())
    doc["metadata"]["name"] = "x[/] :100: \x1b[31m \u202e"
    s.write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["run", str(s)])
    assert r.exit_code == 0, r.output
    assert "x[/] :100: \\x1b[31m \\u202e  simulated 20s" in r.output
    assert "/[/]:100:\\x1b" in r.output  # the probe's path in the event message
    assert "[/]x[/]" in r.output  # the route
    assert "\x1b" not in r.output and "\u202e" not in r.output and "\U0001f4af" not in r.output
    assert len(r.output) < 20_000


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        ("Deployment", "x[/]", "Deployment x[/]: metadata.name: must be a lowercase RFC 1123 subdomain"),
        ("Deployment", "Web", "metadata.name: must be a lowercase RFC 1123 subdomain"),
        ("Deployment", "a" * 254, "metadata.name: must be a lowercase RFC 1123 subdomain of at most 253"),
        ("Service", "web.v1", "Service web.v1: metadata.name: a Service name must be an RFC 1123 label"),
        ("Service", "w" * 64, "metadata.name: a Service name must be an RFC 1123 label of at most 63"),
        ("Service", "web\x1b", "metadata.name: must be a lowercase RFC 1123 subdomain"),
    ],
)
def test_object_names_are_checked_as_the_api_server_does(
    tmp_path: Path, kind: str, name: str, expected: str
) -> None:
    objs = yaml.safe_load(yaml.safe_dump([DEPLOY, SERVICE]))
    objs[0 if kind == "Deployment" else 1]["metadata"]["name"] = name
    s = write_scenario(tmp_path, {"traffic": [{"rate": 1}]}, manifests=objs)
    line = fails_cleanly(["run", str(s)], expected)
    assert line.startswith(f"error: {s}:"), line
    assert "\x1b" not in line


def test_a_giant_value_in_an_error_is_cut(tmp_path: Path) -> None:
    deploy = yaml.safe_load(yaml.safe_dump(DEPLOY))
    deploy["spec"]["replicas"] = "9" * 5_000_000
    s = write_scenario(tmp_path, {}, manifests=[deploy])
    line = fails_cleanly(["run", str(s)], "Deployment web: spec.replicas: Input should be a valid integer")
    assert len(line) < 2000 and line.endswith("…")


def test_a_giant_string_in_the_scenario_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    s = write_scenario(tmp_path, {"duration": "9" * 5_000_000})  # parsing it took minutes
    fails_cleanly(["run", str(s)], "Scenario: spec.duration: 5000000 characters; at most 4096 in a scenario")


def test_a_deletepod_action_is_checked_without_naming_every_pod(tmp_path: Path) -> None:
    deploy = yaml.safe_load(yaml.safe_dump(DEPLOY))
    deploy["spec"]["replicas"] = 2147483647  # building every pod name took 8 GB
    s = write_scenario(
        tmp_path,
        {"actions": [{"kind": "deletePod", "pod": "web-x", "at": "1s"}]},
        manifests=[deploy, SERVICE],
    )
    fails_cleanly(
        ["run", str(s)], "spec.actions[0].pod: no pod 'web-x' when the run starts; pods: web-0, web-1,"
    )


def probesim(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """The installed command line, as a user runs it (main(): standard output failures)."""
    code = "from probesim.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["run", "seed000-demo"], ["run", "seed000-demo", "--json"]])
def test_a_full_disk_on_standard_output_is_one_line(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        r = probesim(*args, stdout=full.fileno())
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["error: <stdout>: cannot write: No space left on device"]


def test_envoy_config_output_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    dr = tmp_path / "dr.yaml"
    dr.write_text(
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: web}\nspec: {host: web}\n"
    )
    fails_cleanly(["envoy-config", str(dr), "-o", str(tmp_path)], "cannot write: Is a directory")
    fails_cleanly(
        ["envoy-config", str(dr), "-o", str(tmp_path / "no" / "x.yaml")], "cannot write: No such file"
    )
    if Path("/dev/full").exists():
        fails_cleanly(["envoy-config", str(dr), "-o", "/dev/full"], "/dev/full: cannot write: No space left")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("x.txt", "x.txt: the plot is a PNG image: give a file name ending in .png"),
        ("", "the plot is a PNG image"),
        (".png", "the plot is a PNG image"),
        ("dir", "the plot is a PNG image"),
        ("dir.png", "dir.png: cannot write the plot: is a directory"),
        ("no/x.png", "no/x.png: cannot write the plot: no such folder"),
    ],
)
def test_a_plot_path_that_is_no_png_file_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir.png").mkdir()
    fails_cleanly(["run", "seed000-demo", "--plot", name], expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "dir.png"]  # nothing written


def test_a_dollar_in_the_scenario_name_is_no_mathtext_in_the_plot(tmp_path: Path) -> None:
    s = write_scenario(tmp_path, {"traffic": [{"rate": 1}]})
    doc = yaml.safe_load(s.read_text())
    doc["metadata"]["name"] = "a $\\frac{$ b"
    s.write_text(yaml.safe_dump(doc))
    r = runner.invoke(app, ["run", str(s), "--plot", str(tmp_path / "p.png")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "p.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("replicas", "timing", "routes", "expected"),
    [
        (2147483647, {}, 1, "2,147,483,647 pods"),  # building every pod name took 8 GB
        (1, {"duration": "8784h", "step": "1ms"}, 1, "31,622,400,000 steps"),  # 236 GiB of series
        (1, {}, 5000, "5,000 routes"),  # minutes
    ],
)
def test_a_run_too_costly_is_refused_up_front_with_its_estimate(
    tmp_path: Path, replicas: int, timing: dict[str, str], routes: int, expected: str
) -> None:
    deploy = yaml.safe_load(yaml.safe_dump(DEPLOY))
    deploy["spec"]["replicas"] = replicas
    traffic = [{"name": f"t{i}", "rate": 1} for i in range(routes)]
    spec: dict[str, object] = {"duration": "60s", "traffic": traffic, **timing}
    s = write_scenario(tmp_path, spec, manifests=[deploy, SERVICE])
    line = fails_cleanly(["run", str(s)], f"error: {s}: this run would cost ")
    assert expected in line and "more than --max-cost 10,000,000" in line


def test_max_cost_raises_or_lowers_the_limit(tmp_path: Path) -> None:
    s = write_scenario(tmp_path, {"duration": "60s", "traffic": [{"rate": 1}]})
    # 60 steps × (100 + 1 container + 1 route × (500 + 1 pod)) + 100 × 1 container
    # + (3 × 1 route × 62 answer slots + 61 queue slots, its timeout's) × 1 container / 8 = 36,250 units
    fails_cleanly(["run", str(s), "--max-cost", "36249"], "≈ 36,250 units, more than --max-cost 36,249")
    assert runner.invoke(app, ["run", str(s), "--max-cost", "36250"]).exit_code == 0
    fails_cleanly(["compare", str(s), str(s), "--max-cost", "1000"], "more than --max-cost 1,000")
    assert "--max-cost" in runner.invoke(app, ["run", "--help"]).output


@pytest.mark.parametrize(
    ("traffic", "says"),
    [
        ([{"name": "a", "rate": 1}, {"name": "a", "rate": 2}], "traffic[1] has the name of traffic[0] ('a')"),
        ([{"rate": 1}, {"rate": 2}], "traffic[0] and traffic[1] both send to '/' without a name"),
        ([{"name": "calls:db/", "rate": 1}], "traffic[0] is named 'calls:db/': names starting 'calls:' are"),
    ],
)
def test_two_traffic_entries_of_one_name_are_refused(
    tmp_path: Path, traffic: list[dict[str, object]], says: str
) -> None:
    """Their series, summary and thresholds are keyed on the name: the second's would be lost."""
    s = write_scenario(tmp_path, {"duration": "10s", "traffic": traffic})
    line = fails_cleanly(["run", str(s)], f"error: {s}:")
    assert says in line and "give " in line.split(says)[1]
