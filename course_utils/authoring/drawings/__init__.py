"""The course's drawings: SVG files generated from the Python source in this package.

Each drawing is a function that places boxes, arrows, grids and text on a ``Canvas`` (``svg``), in
the course's colours (``course_utils.helpers.palette``: queries blue, keys orange, values green),
registered with its name, notebook, title and alt text (``registry``). The modules hold them by
topic: ``attention`` (01, 03, 05), ``architectures`` (04, 09b, 11), ``inference`` (15, 16), ``rope`` (17),
``circuits`` (07b). ``embed`` puts a drawing into a notebook where a ``<!-- drawing: NAME -->``
marker line asks for it; ``commands`` is the command line:

    python -m course_utils.authoring.drawings                  # write notebooks/figures/NAME.svg
    python -m course_utils.authoring.drawings --check          # exit 1 if a file or an embedded copy is stale
    python -m course_utils.authoring.drawings --embed [NB ...] # insert/refresh drawings at their markers
    python -m course_utils.authoring.drawings --list           # the drawings, their notebooks and alt texts
"""

from .drawing import Drawing
from .registry import NAMES, drawings

__all__ = ["NAMES", "Drawing", "drawings"]
