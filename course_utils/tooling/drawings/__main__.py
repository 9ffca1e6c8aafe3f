"""``python -m course_utils.tooling.drawings``: see ``commands``."""

import sys

from .commands import main

sys.exit(main())
