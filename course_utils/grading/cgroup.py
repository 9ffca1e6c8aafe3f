"""A memory cgroup for each job slot's workers, where this machine lets the grader make one.

The address-space limit (``RLIMIT_AS``) does not count memory held in files that are not mapped: a
``memfd`` written with ``write()``, files on a tmpfs. A memory cgroup counts all of it: a worker
over its group's limit is killed by the kernel ("killed (out of memory...)" in its row). Tried
in order: cgroup v1's ``memory`` controller (``/sys/fs/cgroup/memory``, below this process's own
group, then at its top), cgroup v2 (below this process's own group). Where none can be made
(no permission, v2 with this process in the parent group), :func:`create` gives ``""`` and the
run says so: then memory is capped by ``RLIMIT_AS`` and the size limits on files and folders only.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def _own(version: int) -> str:
    """This process's group path for the memory controller (v1) or the unified hierarchy (v2)."""
    with suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if (version == 1 and "memory" in controllers.split(",")) or (version == 2 and controllers == ""):
                return path.lstrip("/")
    return ""


def _candidates() -> list[tuple[Path, str, str]]:
    """(parent folder, limit file, swap limit file) where a group may be made."""
    found = []
    v1 = ROOT / "memory"
    if (v1 / "memory.limit_in_bytes").exists():
        found += [(v1 / _own(1), "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
                  (v1, "memory.limit_in_bytes", "memory.memsw.limit_in_bytes")]
    if (ROOT / "cgroup.controllers").exists():
        found.append((ROOT / _own(2), "memory.max", "memory.swap.max"))
    return found


def create(name: str, limit_bytes: int) -> str:
    """A new memory group ``name`` limited to ``limit_bytes`` (swap included where the kernel allows):
    its folder, or ``""`` where none can be made here."""
    if limit_bytes <= 0:
        return ""
    for parent, limit_file, swap_file in _candidates():
        group = parent / name
        try:
            group.mkdir(exist_ok=True)
            (group / limit_file).write_text(str(limit_bytes))
            if int((group / limit_file).read_text().split()[0]) > limit_bytes:
                raise OSError("the limit did not hold")
        except (OSError, ValueError, IndexError):
            with suppress(OSError):
                group.rmdir()
            continue
        with suppress(OSError):
            (group / swap_file).write_text(str(limit_bytes) if swap_file.startswith("memory.memsw") else "0")
        return str(group)
    return ""


def join(group: str) -> None:
    """Move the calling process into ``group`` (between fork and exec: its children follow)."""
    if group:
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))


def remove(group: str) -> None:
    """Remove an empty group (its processes have ended)."""
    if group:
        with suppress(OSError):
            os.rmdir(group)
