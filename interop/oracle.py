"""The two oracles that judge a generated session of a stack's real code, with no hand-written
expectation (stdlib only; every stack's generator imports it).

- *Unpatched*: the stack ran as released. Its log must conform: `turnfence check` exits 0. A
  finding or an input error is a counterexample, to be shrunk and then explained: the dialect or
  the model is wrong (the common case), or the stack broke a rule (a documented bug of the stack,
  kept as a fixture with its lines and why).
- *Patched*: a planted regression ran. Where the patch changed what the stack did it recorded a
  *witness* (the first log line it made differ); the log must then have the patch's rule among
  its findings, at or after that line. Where it changed nothing (no witness) the log must conform.
- *Documented stack bugs*: a generator may also record, by an observation-only hook where a
  documented bug of the stack as released lives, a *known-bug witness* (``Known``: the bug's name,
  its rule, the line where it first showed). A witnessed bug's rule must then be among the
  findings at or after its line (of several, one at least; else it is missed), like a fired
  patch's; and where no patch fired, every
  finding must be of a witnessed rule at or after its witness: a finding no witness accounts for
  is still flagged. A stack without such hooks passes none, and is judged exactly as above.

A verdict is a plain dict, so a generator can keep it beside the session it judged:
`{"ok": bool, "why": str, "status": "conforms"|"violations"|"input_error", "findings": [...]}`.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Known:
    """A documented bug of the stack as released, witnessed where its code path ran: its name,
    its rule and the log line where it first showed."""

    name: str
    rule: str
    line: int


def known_of(meta: dict[str, Any]) -> list[Known]:
    """The known-bug witnesses a log's (flat) meta records under ``known_bugs``."""
    return [Known(k["name"], k["rule"], int(k["line"])) for k in meta.get("known_bugs") or []]


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


def rule_of(finding: dict[str, Any]) -> str | None:
    """A finding's rule: its invariant, or its kind where it has none (``left_open``: a turn
    the log never ended), as the tally names it."""
    return finding.get("invariant") or finding.get("kind")


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


def judge(
    turnfence: str, log: str, patched: Patched | None = None, known: list[Known] | tuple[Known, ...] = ()
) -> dict[str, Any]:
    """The oracle's verdict on one generated session's log."""
    report = check(turnfence, log)
    if known:
        return _judge_known(report, patched, list(known))
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
            if rule_of(f) == patched.rule and int(f.get("line", 0)) >= patched.witness_line
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


def _judge_known(report: dict[str, Any], patched: Patched | None, known: list[Known]) -> dict[str, Any]:
    """A log with known-bug witnesses. As a fired patch's witness, a known bug's rule must be
    among the findings at or after its line: of several witnessed, one at least (the checker
    judges a run that left the spec at the first break, and may take a later manifestation as
    part of it). A fired patch's rule is required as without known bugs, and the known bugs'
    only if one was witnessed before the patch's. Where no patch fired, every finding must be accounted
    for by a witness of its rule at or before its line."""
    status = report.get("status")
    found = findings_of(report)
    fired = patched is not None and patched.witness_line is not None

    def caught(rule: str, line: int) -> bool:
        return status == "violations" and any(
            rule_of(f) == rule and int(f.get("line", 0)) >= line for f in found
        )

    required = list(known)
    if fired:
        assert patched is not None and patched.witness_line is not None
        # what the run did after the patch fired is the patch's to show
        required = [k for k in known if k.line < patched.witness_line]
    missed = []
    if required and not any(caught(k.rule, k.line) for k in required):
        missed = [(k.name, k.rule, k.line) for k in required]
    if fired:
        assert patched is not None and patched.witness_line is not None
        if not caught(patched.rule, patched.witness_line):
            missed.append((patched.name, patched.rule, patched.witness_line))
    unaccounted = [
        f
        for f in found
        if not any(rule_of(f) == k.rule and int(f.get("line", 0)) >= k.line for k in known)
    ]
    if fired:
        unaccounted = []  # a fired patch's consequences are its own, as without known bugs
    if status == "input_error":
        unaccounted = [{"kind": "input_error", "line": (report.get("error") or {}).get("line")}]
    documented = sorted({k.name for k in known})
    ok = not missed and not unaccounted
    if ok:
        why = "documented stack bug " + ", ".join(f"{k.name} (line {k.line}, {k.rule})" for k in known)
    elif missed:
        why = "; ".join(f"{n} witnessed at line {ln} but {r} was not found at or after it" for n, r, ln in missed)
        why += f": {describe(report)}"
    else:
        names = ", ".join(f"{f.get('invariant') or f.get('kind')}@{f.get('line')}" for f in unaccounted)
        why = f"flagged beyond its documented bugs ({', '.join(documented)}): {names}: {describe(report)}"
    return {
        "ok": ok,
        "why": why,
        "status": status,
        "findings": found,
        "missed": bool(missed),
        "documented": documented,
        "missed_known": sorted({n for n, _, _ in missed if n in documented}),
    }


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("turnfence")
    p.add_argument("log")
    p.add_argument("--patch", help="NAME:RULE:WITNESS_LINE (WITNESS_LINE may be 'none')")
    p.add_argument("--known", action="append", default=[], help="NAME:RULE:LINE, a known-bug witness (repeatable)")
    a = p.parse_args()
    pt = None
    if a.patch:
        name, rule, line = a.patch.split(":")
        pt = Patched(name, rule, None if line == "none" else int(line))
    kn = [Known(n, r, int(ln)) for n, r, ln in (k.split(":") for k in a.known)]
    v = judge(a.turnfence, a.log, pt, kn)
    print(v["why"])
    raise SystemExit(0 if v["ok"] else 1)
