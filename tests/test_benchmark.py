"""The benchmark's floor: how the suite is put in floors (no timed assertions: fake measures, or one tiny child)."""

import sys

import pytest

from course_utils.authoring import benchmark


def test_the_floor_is_the_second_fastest_of_each_kind_measured_apart():
    runs = [{"wall": w, "cpu": c} for w, c in [(3.0, 2.0), (2.0, 9.0), (2.5, 2.2), (9.0, 1.0)]]
    # wall: 2.0 < 2.5 < ...; CPU: 1.0 < 2.0 < ...: each column sorted on its own, one lucky run left out.
    assert benchmark.floor(runs) == {"wall": 2.5, "cpu": 2.0}
    assert benchmark.second_fastest([5.0, 1.0]) == 5.0
    with pytest.raises(ValueError, match="at least two"):
        benchmark.second_fastest([1.0])


def test_the_suite_is_reported_in_seconds_and_in_floors():
    line = benchmark.in_floors({"wall": 150.0, "cpu": 300.0}, {"wall": 2.5, "cpu": 4.0})
    assert line.startswith("150 s wall = 60 floors, 300 s CPU (all processes) = 75 floors")
    assert "floor: 2.50 s wall, 4.00 s CPU, second-fastest of 4" in line


def test_measure_floor_starts_python_as_often_as_asked(monkeypatch):
    commands = []

    def fake(command, env, cwd=None):
        commands.append(command)
        return {"wall": float(len(commands)), "cpu": 10.0 - len(commands)}

    monkeypatch.setattr(benchmark, "run_measured", fake)
    assert benchmark.measure_floor({}, runs=4) == {"wall": 2.0, "cpu": 7.0}
    assert commands == [[sys.executable, "-c", benchmark.FLOOR_CODE]] * 4
    assert all(name in benchmark.FLOOR_CODE for name in ("torch", "matplotlib.pyplot", "course_utils.core"))


def test_the_notebook_table_gains_a_floors_column_only_when_given_a_floor():
    result = {"notebook": "notebooks/solutions/12_x.ipynb", "wall": 9.0, "cpu": 6.0, "peak_mib": 400.0, "ok": True,
              "last_line": "", "trainings": []}
    plain = benchmark.notebook_table([result]).splitlines()
    with_floor = benchmark.notebook_table([result], cpu_floor=2.0).splitlines()
    assert with_floor[0] == plain[0] + " CPU floors |" and with_floor[2] == plain[2] + " 3.0 |"


def test_time_pytest_takes_floors_before_and_after_the_suite_and_names_what_failed(tmp_path, monkeypatch):
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("x\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    calls = []

    def fake(command, env, cwd=None):
        calls.append("suite" if "pytest" in command else "floor")
        if calls[-1] == "suite":
            return {"wall": 100.0, "cpu": 200.0, "last_line": "1 failed, 9 passed", "failed": ["FAILED tests/t.py::x"]}
        return {"wall": 1.0 + len(calls) / 10, "cpu": 2.0, "last_line": ""}  # the floors slow down over time

    monkeypatch.setattr(benchmark, "run_measured", fake)
    report = benchmark.time_pytest(repo)
    assert calls == ["floor"] * 4 + ["suite"] + ["floor"] * 4
    assert report.splitlines() == [
        "README's `pytest` in a fresh clone: 100 s wall = 83 floors, 200 s CPU (all processes) = 100 floors (floor: "
        "1.20 s wall, 2.00 s CPU, second-fastest of 8, 4 before the suite and 4 after): 1 failed, 9 passed",
        "FAILED tests/t.py::x",
    ]
