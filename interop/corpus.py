"""A fixture's own keys in its meta line: what it expects (``expect``, and for a rejected one its
``invariant`` and ``line`` or ``lines``, for an input error its ``error``), its ``story``, its
``source``, a planted bug's ``patch`` and a generated session's ``known_bugs`` (the documented
bugs of the stack as released that its run witnessed: each a ``name``, ``rule`` and ``line``). They are the test corpus's, not the product's: a
meta line keeps them apart under ``fixture``, which ``turnfence check`` ignores by rule.

The writers build a flat dict and ``nest`` it as they write; the readers ``flat`` it back.
"""

from typing import Any

KEYS = ("expect", "invariant", "line", "lines", "error", "story", "source", "patch", "known_bugs")


def nest(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with its corpus keys under ``fixture`` (in its place: where the first one was)."""
    out: dict[str, Any] = {}
    fixture: dict[str, Any] = dict(meta.get("fixture", {}))
    for k, v in meta.items():
        if k in KEYS:
            if "fixture" not in out:
                out["fixture"] = fixture
            fixture[k] = v
        elif k != "fixture":
            out[k] = v
    if fixture and "fixture" not in out:
        out["fixture"] = fixture
    return out


def flat(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with its ``fixture`` keys beside the others, as the writers build it."""
    out = {k: v for k, v in meta.items() if k != "fixture"}
    out.update(meta.get("fixture", {}))
    return out
