"""The two oracles that judge a generated session of a stack's real code, with no hand-written
expectation (stdlib only; every stack's generator imports it).

- *Unpatched*: the stack ran as released. Its log must conform: `turnfence check` exits 0. A
  finding or an input error is a counterexample, to be shrunk and then explained: the dialect or
  the model is wrong (the common case), or the stack broke a rule (a documented bug of the stack,
  kept as a fixture with its lines and why).
- *Patched*: a planted regression ran. Where the patch changed what the stack did it recorded a
  *witness* (the first log line it made differ); the log must then have the patch's rule among
  its findings, at or after that line. Where it changed nothing (no witness) the log must conform.

A verdict is a plain dict, so a generator can keep it beside the session it judged:
`{"ok": bool, "why": str, "status": "conforms"|"violations"|"input_error", "findings": [...]}`.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Patched:
    """A planted regression's expectation: its rule, and the witness line if the patch fired."""

    name: str
    rule: str
    witness_line: int | None


def check(turnfence: str, log: str) -> dict[str, Any]:
    """`turnfence check --format json LOG`, parsed. Exit 0, 1 and 2 all carry a report."""
    run = subprocess.run(
        [turnfence, "check", "--format", "json", log],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode not in (0, 1, 2):
        raise RuntimeError(f"turnfence check {log}: exit {run.returncode}: {run.stderr.strip()}")
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"turnfence check {log}: not JSON ({e}): {run.stdout[:200]!r}") from e


def findings_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list((report.get("verdict") or {}).get("findings") or [])


def describe(report: dict[str, Any]) -> str:
    """One line naming what the checker said: each finding's name and line, or the error."""
    status = report.get("status")
    if status == "input_error":
        err = report.get("error") or {}
        return f"input error at line {err.get('line')}: {err.get('message', err)}"
    parts = [
        f"{f.get('invariant') or f.get('kind')}@{f.get('line')}" for f in findings_of(report)
    ]
    return f"{status}: {', '.join(parts) if parts else 'no findings'}"


def judge(turnfence: str, log: str, patched: Patched | None = None) -> dict[str, Any]:
    """The oracle's verdict on one generated session's log."""
    report = check(turnfence, log)
    status = report.get("status")
    found = findings_of(report)
    if patched is None or patched.witness_line is None:
        ok = status == "conforms"
        if patched is None:
            why = "unpatched: conforms" if ok else f"unpatched, flagged: {describe(report)}"
        else:
            why = (
                f"{patched.name} did not fire: conforms"
                if ok
                else f"{patched.name} did not fire, yet flagged: {describe(report)}"
            )
    else:
        caught = [
            f
            for f in found
            if f.get("invariant") == patched.rule and int(f.get("line", 0)) >= patched.witness_line
        ]
        ok = bool(caught) and status == "violations"
        why = (
            f"{patched.name} caught: {patched.rule} at line {caught[0]['line']} "
            f"(witness line {patched.witness_line})"
            if ok
            else f"{patched.name} fired at line {patched.witness_line} but {patched.rule} "
            f"was not found at or after it: {describe(report)}"
        )
    return {"ok": ok, "why": why, "status": status, "findings": found}


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("turnfence")
    p.add_argument("log")
    p.add_argument("--patch", help="NAME:RULE:WITNESS_LINE (WITNESS_LINE may be 'none')")
    a = p.parse_args()
    pt = None
    if a.patch:
        name, rule, line = a.patch.split(":")
        pt = Patched(name, rule, None if line == "none" else int(line))
    v = judge(a.turnfence, a.log, pt)
    print(v["why"])
    raise SystemExit(0 if v["ok"] else 1)
