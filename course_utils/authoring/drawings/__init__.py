"""The course's drawings: SVG files generated from the Python source in this package.

Each drawing is a function that places boxes, arrows, grids and text on a ``Canvas`` (``svg``), in
the course's colours (``course_utils.helpers.palette``: queries blue, keys orange, values green),
made a ``Drawing`` with its name, notebook, title and alt text by ``@drawing(...)`` (``drawing``) and
listed in ``registry``, which imports the drawing modules (they never import it). The modules hold
them by topic: ``attention`` (01, 03, 05), ``worked`` (the lessons' worked examples with their
numbers: 01, 01b, 03, 05, 11), ``masks`` (01b, 03b), ``patterns`` (02, 06, 07), ``architectures``
(04, 08, 09b, 11), ``positions`` (09, 17), ``inference`` (15, 16), ``circuits`` (07b). ``embed`` puts
a drawing into a notebook where a ``<!-- drawing: NAME -->`` marker line asks for it; ``commands`` is the command line:

    python -m course_utils.authoring.drawings                  # write notebooks/figures/NAME.svg
    python -m course_utils.authoring.drawings --check          # exit 1 if a file or an embedded copy is stale
    python -m course_utils.authoring.drawings --embed [NB ...] # insert/refresh drawings at their markers
    python -m course_utils.authoring.drawings --list           # the drawings, their notebooks and alt texts
"""

from .drawing import Drawing
from .registry import NAMES, drawings

__all__ = ["NAMES", "Drawing", "drawings"]
