"""Student versions are made by replacing solution regions with a stub."""

import nbformat
import pytest

from course_utils.authoring.nbtools import STUB, make_student_notebook, student_source


def test_solution_region_becomes_an_indented_stub():
    source = "def f(n):\n    '''doc'''\n    ### BEGIN SOLUTION\n    x = n + 1\n    return x\n    ### END SOLUTION\n\nprint(1)"
    assert student_source(source) == f"def f(n):\n    '''doc'''\n    {STUB}\n\nprint(1)"


def test_two_regions_in_one_cell():
    source = "a = 1\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION\nc = 3\n### BEGIN SOLUTION\nd = 4\n### END SOLUTION"
    assert student_source(source) == f"a = 1\n{STUB}\nc = 3\n{STUB}"


@pytest.mark.parametrize(
    "source",
    ["### BEGIN SOLUTION\nx = 1", "x = 1\n### END SOLUTION", "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION"],
)
def test_unbalanced_markers_are_an_error(source):
    with pytest.raises(ValueError):
        student_source(source)


def test_student_notebook_clears_outputs_and_is_marked():
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 42\n    ### END SOLUTION")
    code.outputs = [nbformat.v4.new_output("stream", text="42\n")]
    code.execution_count = 3
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), code]
    student = make_student_notebook(nb)
    assert student.metadata["course"]["role"] == "student"
    assert student.cells[1].source == f"def f():\n    {STUB}"
    assert student.cells[1].outputs == [] and student.cells[1].execution_count is None
    assert "return 42" in nb.cells[1].source  # the solution notebook itself is untouched


def test_add_header_inserts_badges_and_colab_cell_once():
    from course_utils.authoring.nbtools import BADGES_TAG, COLAB_SETUP, COLAB_TAG, NOTEBOOKS, add_header

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("import torch")]
    path = NOTEBOOKS / "01_example.ipynb"
    add_header(nb, path)
    add_header(nb, path)  # idempotent
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code", "code"]
    assert BADGES_TAG in nb.cells[0].metadata.tags and COLAB_TAG in nb.cells[2].metadata.tags
    assert "lab/tree/notebooks/01_example.ipynb" in nb.cells[0].source
    assert "/blob/main/notebooks/01_example.ipynb" in nb.cells[0].source
    assert nb.cells[2].source == COLAB_SETUP and nb.cells[3].source == "import torch"


def test_student_badges_open_the_student_version():
    from course_utils.authoring.nbtools import NOTEBOOKS

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION")]
    student = make_student_notebook(nb, NOTEBOOKS / "05_x.ipynb")
    assert "notebooks/05_x.ipynb" in student.cells[0].source and "solutions" not in student.cells[0].source


def test_the_launch_links_are_text_that_reads_offline():
    """No remote badge image: offline it would be a broken-image icon at the top of every notebook."""
    import re

    from course_utils.authoring.nbtools import NOTEBOOKS, badges, launch_links

    header = badges(NOTEBOOKS / "01_example.ipynb")
    assert not re.search(r"!\[|<img|\.svg|\.png", header), header
    links = re.findall(r"\[([^\]]+)\]\(([^)]+)\)", header)
    binder, colab = launch_links(NOTEBOOKS / "01_example.ipynb")[:2]
    assert links == [("Binder", binder), ("Colab", colab)]


def test_colab_cell_does_nothing_and_prints_nothing_outside_colab():
    import subprocess
    import sys

    from course_utils.authoring.nbtools import COLAB_SETUP

    probe = COLAB_SETUP + "\nimport sys as _s\nprint(sorted(set(_s.modules) & {'subprocess', 'google.colab'}))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n" and result.stderr == ""
    # On Colab it clones and installs without touching Colab's own packages.
    assert '"--no-deps"' in COLAB_SETUP and "git" in COLAB_SETUP


def test_every_notebook_starts_with_its_badges_and_the_colab_cell():
    from course_utils.authoring.nbtools import COLAB_SETUP, all_notebooks, badges

    for path in all_notebooks():
        nb = nbformat.read(path, as_version=4)
        assert nb.cells[0].source == badges(path), f"{path.name}: badges missing or stale"
        first_code = next(c for c in nb.cells if c.cell_type == "code")
        assert first_code.source == COLAB_SETUP, f"{path.name}: first code cell is not the Colab set-up cell"
        assert first_code.metadata.get("jupyter", {}).get("source_hidden") and first_code.metadata.get("cellView") == "form", (
            f"{path.name}: the Colab set-up cell is not collapsed"
        )
        assert first_code.outputs == [], f"{path.name}: the Colab cell printed something"


def test_execute_passes_the_environment_and_shuts_its_kernel_down(tmp_path, monkeypatch, live_child_pids):
    # The kernel sees the caller's environment (the benchmark's COURSE_TRAINING_LOG reaches the trainings).
    # And a NotebookClient given a kernel manager does not own it, so it would leave the kernel
    # running: `nbtools execute` of every notebook then kept 30 kernels alive until it exited.
    from course_utils.authoring.nbtools import execute

    monkeypatch.setenv("COURSE_TRAINING_LOG", str(tmp_path / "log.jsonl"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os\nprint(os.getpid(), os.environ.get('COURSE_TRAINING_LOG'))")])
    execute(nb, tmp_path)
    pid, log = nb.cells[0].outputs[0].text.split()
    assert log == str(tmp_path / "log.jsonl")
    assert int(pid) not in live_child_pids()


@pytest.mark.slow  # a child process and a kernel that trains: end to end, as the grader's class-folder test
def test_benchmark_runs_a_notebook_and_reports_its_trainings(tmp_path):
    from course_utils.authoring import benchmark, guide

    path = tmp_path / "07_tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import torch\nfrom course_utils.models.training import train_steps\n"
        "net = torch.nn.Linear(2, 1)\n"
        "train_steps(net, lambda g: net(torch.randn(4, 2, generator=g)).pow(2).mean(), steps=3, lr=0.1, name='tiny')")]), path)
    result = benchmark.run_notebook(path, tmp_path / "log.jsonl")
    assert result["ok"] and result["cpu"] > 0 and result["peak_mib"] > 10
    [training] = result["trainings"]
    assert (training["name"], training["steps"], training["notebook"], training["stop"]) == ("tiny", 3, str(path), "budget")
    table = benchmark.notebook_table([result])
    assert guide.parse_benchmark(table) == {"07": f"{result['wall']:.0f} s, {result['peak_mib']:.0f} MiB"}
    rows = benchmark.training_table([result]).splitlines()
    assert len(rows) == 3 and "| tiny | Linear | 1 | 3 |" in rows[2] and "| budget |" in rows[2]


def test_run_measured_reads_the_cpu_and_peak_memory_of_a_child_and_its_last_line():
    import sys

    from course_utils.authoring import benchmark

    code = "import time\nx = bytearray(80 * 2**20)\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass\nprint('done')"
    r = benchmark.run_measured([sys.executable, "-c", code], dict(__import__("os").environ))
    assert r["ok"] and r["last_line"] == "done" and r["cpu"] >= 0.2 and r["peak_mib"] >= 80
    assert not benchmark.run_measured([sys.executable, "-c", "raise SystemExit(3)"], {})["ok"]
    report = "print('FAILED tests/test_x.py::test_y - AssertionError'); print('ERRORS'); print('1 failed, 2 passed')"
    r = benchmark.run_measured([sys.executable, "-c", report], {})
    assert r["failed"] == ["FAILED tests/test_x.py::test_y - AssertionError"] and r["last_line"] == "1 failed, 2 passed"


def test_benchmark_tables_show_an_error_and_an_early_stop():
    from course_utils.authoring import benchmark

    stopped = {"name": "train_lm", "model": "CausalLM", "cell": 12, "epochs": 1, "steps": 40, "cpu_s": 1.5, "wall_s": 1.6,
               "loss": 0.3, "stop": "target", "metric": 0.991, "target": 0.99}
    results = [{"notebook": "notebooks/solutions/11_x.ipynb", "wall": 3.0, "cpu": 2.5, "peak_mib": 400.0, "ok": False,
                "last_line": "ValueError: bad | input", "trainings": [stopped]}]
    assert benchmark.notebook_table(results).splitlines()[2] == (
        "| notebooks/solutions/11_x.ipynb | 3.0 | 400 | 2.5 | 1 | 1.5 | error: ValueError: bad / input |")
    assert benchmark.training_table(results).splitlines()[2] == (
        "| 11_x (solution) | 12 | train_lm | CausalLM | 1 | 40 | 1.50 | 1.60 | 0.3000 | target | 0.991 / 0.99 |")
