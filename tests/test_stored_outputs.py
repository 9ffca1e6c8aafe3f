"""What a reader sees before running anything: every notebook's stored outputs.

Stored outputs are what GitHub, the course website and JupyterLab show before Run All. They
come from one full run (`python -m course_utils.authoring.nbtools execute`) with no error.
"""

import json
import re

import nbformat
import pytest

from course_utils.authoring.nbtools import ROOT, all_notebooks

NOTEBOOKS = all_notebooks()
MACHINE_PATHS = re.compile(r"(/home/|/Users/|/work/|/tmp/|/root/|site-packages|[A-Z]:\\\\Users)")


def _outputs(path):
    nb = nbformat.read(path, as_version=4)
    return nb, [(c, o) for c in nb.cells if c.cell_type == "code" for o in c.outputs]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_stored_outputs_read_well_without_a_kernel(path):
    nb, outputs = _outputs(path)
    errors = [o.get("ename") for _, o in outputs if o.output_type == "error"]
    assert not errors, f"stored tracebacks: {errors}"
    unrun = [c.source[:40] for c in nb.cells if c.cell_type == "code" and c.source.strip() and c.execution_count is None]
    assert not unrun, f"code cells stored without a run (nbval compares nothing there): {unrun}"
    for cell, out in outputs:
        text = json.dumps({k: v for k, v in out.get("data", {}).items() if not k.startswith("image/")}) + out.get("text", "")
        assert not MACHINE_PATHS.search(text), f"a machine path in the output of {cell.source[:60]!r}"
        plain = out.get("data", {}).get("text/plain", "")
        assert not plain.startswith(("VBox(", "HBox(", "Output(")), f"a raw widget repr is stored: {plain[:60]!r}"
