"""Same scenario and seed, same result on any machine: numpy picks its exp and log by the CPU's
vector extensions (on an AVX-512 machine their last bits differ from those of one without), and
the capacity model's latency distributions and draws go through them. Runs with numpy's AVX-512
and AVX2 paths switched off (NPY_DISABLE_CPU_FEATURES, as on an older CPU) must give the same
JSON, every series and event included."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from probesim.engine import simulate
from probesim.manifests.scenario import load_scenario
from probesim.scenarios import find

# The capacity model with dependency calls and keep-alive clients; with an HPA under a surge;
# the mesh's outlier detection with its draws.
CASES = ["patient-timeout-retry-3", "gke-surge-defaults", "seed003-header-abort"]
OFF = "AVX512_SPR AVX512_ICL X86_V4 X86_V3"


def _found() -> list[str]:
    """The extensions numpy found on this CPU (none to switch off on an old one)."""
    found = importlib.import_module("numpy._core._multiarray_umath").__cpu_features__
    return [f for f in OFF.split() if found.get(f)]


def _result(name: str) -> str:
    b = find(name)
    assert b is not None
    return json.dumps(simulate(load_scenario(str(b.path))).to_json(), sort_keys=True)


@pytest.mark.skipif(not _found(), reason="this CPU has no AVX2 or AVX-512 path to switch off")
def test_results_do_not_depend_on_the_cpus_vector_extensions() -> None:
    code = (
        "import json, sys\n"
        "from tests.engine.test_cpu_independence import CASES, _result\n"
        "import numpy as np\n"
        "x = np.linspace(-30, 5, 100_001)\n"
        "print(json.dumps({'exp': np.exp(x).tobytes().hex(), 'results': [_result(n) for n in CASES]}))"
    )
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(_found())}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert r.returncode == 0, r.stderr[-2000:]
    other = json.loads(r.stdout)
    if other["exp"] == np.exp(np.linspace(-30, 5, 100_001)).tobytes().hex():
        # (An AVX2-only CPU: numpy's AVX2 exp gives the baseline's bits.)
        pytest.skip("switching numpy's vector paths off changes no bit of its exp on this CPU")
    for name, theirs in zip(CASES, other["results"], strict=True):
        assert theirs == _result(name), name
