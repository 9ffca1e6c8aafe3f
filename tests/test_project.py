"""The project's own files agree with each other: pins, install and test commands."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _pins_from_requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def _pins_from_environment() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        match = re.match(r"\s+-\s+([A-Za-z0-9_.\-]+)==(\S+)\s*$", line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_every_requirement_is_pinned():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][\w.]*", line), f"not pinned: {line}"
    assert _pins_from_requirements()["torch"] == "2.13.0"


def test_environment_yml_names_the_same_packages_and_versions():
    assert _pins_from_environment() == _pins_from_requirements()
    assert "-e ." in (ROOT / "requirements.txt").read_text().splitlines()
    assert re.search(r"^\s+- -e \.$", (ROOT / "environment.yml").read_text(), re.M)


def _fenced_blocks(text: str) -> list[str]:
    return re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S)


def test_the_readme_is_for_students_and_short():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme) <= 15_000, f"README.md has {len(readme)} characters; students need at most 15,000 (the rest: CONTRIBUTING.md)"
    for heading in ("## Start", "## The notebooks"):  # the site links to #start and reads the table under the second
        assert re.search(rf"^{heading}$", readme, re.M), f"README.md lost its heading {heading!r}"


def test_every_install_makes_a_virtual_environment_first_and_linux_starts_with_the_cpu_build():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    installs = [block for block in _fenced_blocks(readme) if "pip install" in block]
    assert len(installs) >= 3, "the README should give an install block per system (Linux, macOS, Windows)"
    for block in installs:
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        first_pip = next(i for i, line in enumerate(lines) if "pip install" in line)
        assert any("-m venv" in line for line in lines[:first_pip]), f"no virtual environment before pip:\n{block}"
        assert lines[-1] == "jupyter lab", f"an install block should end by opening the course:\n{block}"
    linux = installs[0]
    first = next(line for line in linux.splitlines() if "pip install" in line)
    assert first.strip() == "python -m pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu", (
        "on Linux the first install must be the CPU build of torch (PyPI's pulls several GB of CUDA)")
    assert "python -m pip install -r requirements.txt" in linux
    assert "--allow-root" in readme, "say that JupyterLab refuses to run as root without --allow-root"
    env = (ROOT / "environment.yml").read_text(encoding="utf-8")
    assert re.search(r"^\s+- --extra-index-url https://download.pytorch.org/whl/cpu$", env, re.M), (
        "environment.yml should take the CPU build of torch by default")


def test_contributing_gives_the_commands_ci_runs():
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text()
    install = "python -m pip install -r requirements.txt"
    assert install in readme and install in guide and install in ci
    assert "jupyter lab" in readme
    assert re.search(r"^pytest$", guide, re.M), "CONTRIBUTING.md must give `pytest` as the test command"
    assert re.search(r"^\s*(run_pytest )?pytest$", ci, re.M), ".ci/run must run the guide's `pytest`"
    other_paths = ('taskset -c 0 env MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default '
                   'pytest notebooks -n 0 -m ""')
    assert other_paths in ci, ".ci/run must run every notebook again under other CPU math paths, training afresh"
    assert other_paths in guide
    assert re.search(r"^\s*(run_pytest )?pytest -m slow( tests)?$", ci, re.M), ".ci/run must run the slow tier"
    assert "pytest -m slow" in guide
    assert "python -m course_utils.authoring.nbtools execute" in guide
    assert "python -m course_utils.authoring.nbtools benchmark --pytest" in guide


def test_readme_links_name_existing_notebooks_and_list_every_notebook():
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", readme))
    missing = sorted(link for link in linked if not (ROOT / link).is_file())
    assert not missing, f"README links to notebooks that do not exist: {missing}"
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert on_disk - linked == set(), f"notebooks missing from the README table: {sorted(on_disk - linked)}"
    # Each notebook's own launch links are on its first cell and on the site; the README launches the course.
    from course_utils.authoring.nbtools import launch_links

    binder = launch_links(ROOT / "notebooks" / "01_scaled_dot_product_attention.ipynb")[0]
    course = binder.rsplit("/", 1)[0]
    assert f"]({course})" in readme, f"README should launch the whole course on Binder: {course}"


def _collected(*args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    return run.stdout.strip().splitlines()[-1]


@pytest.mark.slow  # two pytest start-ups: 10-20 s
def test_the_slow_tier_thins_folders_but_a_named_file_runs_whole():
    # notebooks/05_causal_mask.ipynb is a student version (its solution twin is in notebooks/solutions/)
    folder = _collected("notebooks/05_causal_mask.ipynb", "notebooks/solutions/05_causal_mask.ipynb", "-m", "not slow")
    named = _collected("notebooks/05_causal_mask.ipynb")
    assert re.match(r"\d+/\d+ tests collected \(\d+ deselected\)", folder), folder
    assert re.match(r"\d+ tests collected", named) and "deselected" not in named, named


@pytest.mark.parametrize("name", ["README.md", "INSTRUCTORS.md", "CONTRIBUTING.md"])
def test_no_placeholder_left_in_the_prose(name):
    # A placeholder such as FIRST_RUN once reached the README. Names in backticks (COURSE_DEVICE,
    # MKL_CBWR) are code, not placeholders.
    text = (ROOT / name).read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    placeholders = re.findall(r"\b[A-Z]{2,}(?:_[A-Z]{2,})+\b|\bTODO\b|\bFIXME\b|\bXXX\b", prose)
    assert not placeholders, placeholders
