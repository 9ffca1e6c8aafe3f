"""binder/ builds the course's environment on mybinder.org: same pins, CPU-only torch, course_utils.

Binder itself cannot run here, so these tests check what repo2docker will read:

- binder/ exists, so repo2docker ignores the root's requirements.txt, environment.yml and
  pyproject.toml: binder/requirements.txt must carry the same pins itself;
- torch is the "+cpu" build from PyTorch's CPU index (PyPI's Linux build pulls GBs of CUDA);
- binder/postBuild (run from the repository root, after the requirements) installs
  course_utils editable, stops on the first error, and writes JupyterLab settings that exist.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Packages the root requirements.txt may list only for CI's browser test; not needed on Binder.
NOT_ON_BINDER = {"playwright"}


def _requirement_lines(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def _pins(path: Path) -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` lines; options (``-e``, ``--extra-index-url``) skipped."""
    pins = {}
    for line in _requirement_lines(path):
        if line.startswith("-"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([0-9][\w.+]*)", line)
        assert match, f"{path.relative_to(ROOT)}: not pinned with ==: {line!r}"
        pins[match.group(1).lower()] = match.group(2)
    return pins


def test_binder_folder_is_the_one_repo2docker_reads():
    assert (BINDER / "requirements.txt").is_file()
    assert not (ROOT / ".binder").exists(), "repo2docker refuses a repository with both binder/ and .binder/"
    # Any of these would switch repo2docker to another build pack than the one tested here.
    for other in ("Dockerfile", "environment.yml", "environment.yaml", "Pipfile", "setup.py", "pyproject.toml"):
        assert not (BINDER / other).exists(), f"binder/{other} would change how Binder builds the course"


def test_binder_pins_equal_the_course_pins():
    course = {name: v for name, v in _pins(ROOT / "requirements.txt").items() if name not in NOT_ON_BINDER}
    binder = _pins(BINDER / "requirements.txt")
    # torch carries the local version label of the CPU build; the release must match.
    assert binder.get("torch", "").removesuffix("+cpu") == course["torch"], (binder.get("torch"), course["torch"])
    binder["torch"] = binder["torch"].removesuffix("+cpu")
    assert binder == course


def test_torch_is_the_cpu_build_from_pytorchs_cpu_index():
    lines = _requirement_lines(BINDER / "requirements.txt")
    assert _pins(BINDER / "requirements.txt")["torch"].endswith("+cpu"), "a plain torch pin may resolve to PyPI's CUDA build"
    # An extra index: the other packages still come from PyPI.
    assert f"--extra-index-url {CPU_INDEX}" in lines or f"--extra-index-url={CPU_INDEX}" in lines
    assert not any(re.match(r"(--index-url|-i)\b", line) for line in lines), "--index-url would hide PyPI"


def test_runtime_is_the_python_of_environment_yml():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    env_python = re.search(r"^\s*-\s*python=(\d+\.\d+)\s*$", (ROOT / "environment.yml").read_text(), re.M)
    assert env_python, "environment.yml names no python=X.Y"
    assert runtime == f"python-{env_python.group(1)}"


def test_postbuild_installs_course_utils_and_stops_on_errors():
    post_build = BINDER / "postBuild"
    text = post_build.read_text()
    assert text.startswith("#!/bin/bash\n"), "repo2docker runs postBuild as a program: it needs a shebang"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable (git: mode 100755)"
    assert re.search(r"^set -e", text, re.M), "without set -e a failing step does not fail the build"
    commands = [line.strip() for line in text.splitlines() if not line.strip().startswith("#")]
    install = [c for c in commands if re.search(r"\bpip install\b.*\s-e \.$", c)]
    assert install, "postBuild must install course_utils editable (pip install -e .), from the repository root"
    assert "--no-deps" in install[0], "without --no-deps pip may replace the pinned CPU build of torch"
    # requirements.txt leaves the package out (a local path there stops Binder from caching the environment).
    assert not any(line.startswith("-e") for line in _requirement_lines(BINDER / "requirements.txt"))
    result = subprocess.run(["bash", "-n", str(post_build)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _jupyterlab_schema(plugin_id: str) -> dict:
    from jupyterlab.commands import get_app_dir

    package, plugin = plugin_id.split(":")
    path = Path(get_app_dir()) / "schemas" / package / f"{plugin}.json"
    if not path.is_file():
        pytest.skip(f"no JupyterLab schema at {path}")
    return json.loads(path.read_text())


def test_postbuild_writes_jupyterlab_settings_that_exist(tmp_path):
    """Run postBuild's settings step with a temporary prefix; every key must be a real, valid setting."""
    text = (BINDER / "postBuild").read_text()
    snippet = re.search(r"<<'PY'\n(.*?)\nPY\n", text, re.S)
    assert snippet, "postBuild's Python step (python - <<'PY' ... PY) not found"
    prefix = tmp_path / "env"
    code = f"import sys; sys.prefix = {str(prefix)!r}\n" + snippet.group(1)
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    overrides = json.loads((prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json").read_text())
    assert overrides["@jupyterlab/notebook-extension:tracker"]["autoStartDefaultKernel"] is True
    for plugin_id, values in overrides.items():
        properties = _jupyterlab_schema(plugin_id)["properties"]
        for key, value in values.items():
            assert key in properties, f"{plugin_id} has no setting {key!r}"
            allowed = [option["const"] for option in properties[key].get("oneOf", []) if "const" in option]
            if allowed:
                assert value in allowed, f"{plugin_id}:{key} = {value!r}, allowed {allowed}"
            elif properties[key].get("type") == "boolean":
                assert isinstance(value, bool), f"{plugin_id}:{key} must be true/false"
    # Run twice: it keeps what is there and stays valid JSON.
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert json.loads((prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json").read_text()) == overrides
