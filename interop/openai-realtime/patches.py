"""Planted bugs: monkeypatches of the installed openai-agents, one per rejected scenario.

``PATCHES`` maps a name to a function that patches the SDK inside the harness process; the
harness calls it before the session starts, only for the scenario whose ``bug.patch`` names it
(each scenario runs in a process of its own). A patch's docstring is the fixture's ``patch``.
BUGS.md gives the public report each one reproduces and why the patch sits where it does.
"""

from __future__ import annotations

from collections.abc import Callable

PATCHES: dict[str, Callable[[], None]] = {}


def patch(fn: Callable[[], None]) -> Callable[[], None]:
    PATCHES[fn.__name__] = fn
    return fn
