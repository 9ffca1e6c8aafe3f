"""The reporting core every checker shares.

Every checker takes the student's answer (usually a function), prints one line,
a pass or a hint that names the mistake, and returns True only for a correct
answer. An unimplemented stub (``raise NotImplementedError``) gets a friendly
"not implemented yet", never a traceback.

Inside a checker, raise ``Hint("...")`` for a recognised mistake; ``report``
turns it into the printed line.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


class Hint(Exception):
    """A specific, recognised mistake, explained to the student."""


def report(task: str, check: Callable[[], None]) -> bool:
    """Run ``check``; print a pass, a hint or "not implemented yet"; return whether it passed."""
    try:
        check()
    except NotImplementedError:
        print(f"[not yet] {task}: not implemented yet. Replace the `raise NotImplementedError` line with your code and run the cell again.")
        return False
    except Hint as hint:
        print(f"[try again] {task}: {hint}")
        return False
    except Exception as err:  # the student's code crashed: say how, without a traceback
        print(f"[try again] {task}: your code raised {type(err).__name__}: {err}")
        return False
    print(f"[correct] {task}: well done, every check passed.")
    return True


def expect_tensor(value, what: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise Hint(f"{what} should be a torch.Tensor, got {type(value).__name__}.")
    return value
