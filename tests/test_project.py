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


def test_readme_commands_are_the_ones_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    install = "python -m pip install -r requirements.txt"
    assert install in readme and install in ci
    assert "jupyter lab" in readme
    assert re.search(r"^pytest$", readme, re.M), "README must give `pytest` as the test command"
    assert re.search(r"^\s*(run_pytest )?pytest$", ci, re.M), ".ci/run must run the README's `pytest`"
    other_paths = ('taskset -c 0 env MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=default '
                   'pytest notebooks -n 0 -m ""')
    assert other_paths in ci, ".ci/run must run every notebook again under other CPU math paths, training afresh"
    assert other_paths in readme
    assert re.search(r"^\s*(run_pytest )?pytest -m slow$", ci, re.M), ".ci/run must run the slow tier"
    assert "pytest -m slow" in readme
    assert "python -m course_utils.authoring.nbtools execute" in readme


def test_readme_links_name_existing_notebooks_and_list_every_notebook():
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", readme))
    launched = set(re.findall(r"\]\(https://[^)]*?/(notebooks/[^)?#]+\.ipynb)\)", readme))
    assert linked <= launched, f"notebooks without Binder/Colab links: {sorted(linked - launched)}"
    linked |= launched
    from course_utils.authoring.nbtools import launch_links

    for link in linked:
        for url in launch_links(ROOT / link):
            assert f"]({url})" in readme, f"README launch link for {link} differs from nbtools.launch_links: {url}"
    missing = sorted(link for link in linked if not (ROOT / link).is_file())
    assert not missing, f"README links to notebooks that do not exist: {missing}"
    on_disk = {p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert on_disk - linked == set(), f"notebooks missing from the README table: {sorted(on_disk - linked)}"


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


@pytest.mark.parametrize("name", ["README.md", "INSTRUCTORS.md"])
def test_no_placeholder_left_in_the_prose(name):
    # A placeholder such as FIRST_RUN once reached the README. Names in backticks (COURSE_DEVICE,
    # MKL_CBWR) are code, not placeholders.
    text = (ROOT / name).read_text(encoding="utf-8")
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    placeholders = re.findall(r"\b[A-Z]{2,}(?:_[A-Z]{2,})+\b|\bTODO\b|\bFIXME\b|\bXXX\b", prose)
    assert not placeholders, placeholders
