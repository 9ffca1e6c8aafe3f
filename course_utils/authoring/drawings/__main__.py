"""``python -m course_utils.authoring.drawings``: see ``commands``."""

import sys

from .commands import main

sys.exit(main())
