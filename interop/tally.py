"""Every generated session of a run judged by the oracles (interop/oracle.py), tallied by cause,
and held to a baseline: the gate of generated sessions (ci/generated.sh). Stdlib only.

    python3 interop/tally.py TURNFENCE RUN_DIR [--baseline FILE --key KEY] [--write-baseline]

RUN_DIR is a generator's `--out` directory: every `*.jsonl` log beneath it (but its
counterexamples and hypothesis's database) is one session, its meta line saying what it expects
(`accepted`: an unpatched run; `rejected` with `invariant` and `line`: a planted regression that
fired, its rule and its witness line; `known_bugs`: the documented bugs of the stack as released
that the run witnessed, each a name, rule and line). A session the oracle does not accept is
tallied under its cause: what the checker said, by rule (`findings: a, b`) or input error. A
session the oracle accepts as its documented bugs is tallied apart, under `documented stack bug:
NAME`: not a failure, printed and written with the baseline, held to nothing.

The baseline (JSON, one entry per KEY: a stack, version and kind of run) holds the causes known
and how many logs each had (a LiveKit session writes two: its events and its report): the open false alarms and misses, each kept in fixtures/open/.
The gate fails when a cause has more sessions than its baseline says, or a cause is new; it says
so when one has fewer, so the baseline is lowered as causes are fixed (`--write-baseline`).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import oracle  # noqa: E402


def sessions(run: Path) -> list[Path]:
    skip = ("counterexamples", "hypothesis", ".hypothesis")
    return sorted(
        p for p in run.rglob("*.jsonl") if not any(part.startswith(skip) for part in p.parts)
    )


def cause(verdict: dict) -> str:
    if verdict["status"] == "input_error":
        return "input error"
    names = sorted({f.get("invariant") or f.get("kind") for f in verdict["findings"]})
    return f"{verdict['status']}: {', '.join(names) if names else 'none'}"


def tally(turnfence: str, run: Path) -> tuple[int, Counter, Counter]:
    causes: Counter = Counter()
    documented: Counter = Counter()
    logs = sessions(run)
    for log in logs:
        meta = corpus.flat(json.loads(log.open().readline()).get("meta", {}))
        patched = None
        if meta.get("expect") == "rejected" and "invariant" in meta and "line" in meta:
            patched = oracle.Patched("patch", meta["invariant"], int(meta["line"]))
        known = oracle.known_of(meta)
        v = oracle.judge(turnfence, str(log), patched, known)
        if v["ok"] and v.get("documented"):
            documented[f"documented stack bug: {', '.join(v['documented'])}"] += 1
        elif not v["ok"] and known:
            if v["missed_known"]:
                causes[f"missed (documented stack bug: {', '.join(v['missed_known'])}; {cause(v)})"] += 1
            else:
                kind = "missed" if v["missed"] else "flagged"
                causes[f"{kind} ({cause(v)}; beyond: {', '.join(v['documented'])})"] += 1
        elif not v["ok"]:
            kind = "missed" if patched else "flagged"
            causes[f"{kind} ({cause(v)})"] += 1
    return len(logs), causes, documented


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    turnfence, run = args[0], Path(args[1])
    baseline = Path(args[args.index("--baseline") + 1]) if "--baseline" in args else None
    key = args[args.index("--key") + 1] if "--key" in args else str(run)
    n, causes, documented = tally(turnfence, run)
    if n == 0:
        print(f"{key}: no session logs under {run}")
        return 1
    bad = sum(causes.values())
    print(f"{key}: {n} logs, {n - bad} as the oracles expect, {bad} not")
    for c, k in sorted(causes.items(), key=lambda x: (-x[1], x[0])):
        print(f"  {k:6d}  {c}")
    if documented:
        print(f"  and {sum(documented.values())} logs as the oracles expect of the stack's documented bugs:")
        for c, k in sorted(documented.items(), key=lambda x: (-x[1], x[0])):
            print(f"  {k:6d}  {c}")
    if baseline is None:
        return 0
    known = json.loads(baseline.read_text()) if baseline.exists() else {}
    if "--write-baseline" in args:
        known[key] = {"logs": n, "causes": dict(sorted(causes.items()))}
        if documented:
            known[key]["documented"] = dict(sorted(documented.items()))
        baseline.write_text(json.dumps(known, indent=2, sort_keys=True) + "\n")
        print(f"  baseline for {key} written to {baseline}")
        return 0
    base = known.get(key)
    if base is None:
        print(f"  no baseline for {key} in {baseline}")
        return 1
    if base["logs"] != n:
        print(f"  the baseline holds {base['logs']} logs, the run {n}: not comparable")
        return 1
    status = 0
    for c, k in sorted(causes.items()):
        was = base["causes"].get(c, 0)
        if k > was:
            print(f"  WORSE: {c}: {k} logs, the baseline {was}")
            status = 1
    for c, was in sorted(base["causes"].items()):
        k = causes.get(c, 0)
        if k < was:
            print(f"  better: {c}: {k} logs, the baseline {was} (lower it: --write-baseline)")
    was_documented = base.get("documented", {})
    if dict(documented) != was_documented:
        # not a failure: a documented bug's witness and its finding agree wherever they are counted
        print(f"  documented stack bugs differ from the baseline's (not held): {dict(sorted(documented.items()))}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
