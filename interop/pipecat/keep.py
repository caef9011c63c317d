#!/usr/bin/env python3
"""Keep a generated session's log (a shrunk counterexample) as a fixture.

    python3 interop/pipecat/keep.py LOG NAME --note "the cause" [--rejected INVARIANT LINE]

Writes ``fixtures/generated/pipecat@VERSION/NAME.jsonl``: the log as the generator wrote it,
its meta line's ``story`` the cause (``--note``) and then the session as the generator printed
it (the ``.txt`` beside the log), its ``source`` the session's JSON, from which
``strategies.Session.from_json`` rebuilds it. A false alarm keeps
``expect: accepted`` (Pipecat was right there); a bug of Pipecat's own is kept
``expect: rejected`` with its invariant and line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "interop"))

import corpus  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("log", type=Path)
    ap.add_argument("name")
    ap.add_argument("--note", required=True)
    ap.add_argument("--rejected", nargs=2, metavar=("INVARIANT", "LINE"))
    a = ap.parse_args()

    lines = a.log.read_text().splitlines()
    meta = json.loads(lines[0])
    m = corpus.flat(meta["meta"])
    txt = a.log.with_suffix(".txt")
    story = txt.read_text().split("\n\nverdict:")[0] if txt.exists() else ""
    session = ""
    if txt.exists():
        for ln in txt.read_text().splitlines():
            if ln.startswith("session: "):
                session = ln[len("session: ") :]
    # the checker's meta line has no field of its own for the cause yet: it leads the story
    m["story"] = f"{a.note} -- a generated session, shrunk: " + "; ".join(story.splitlines())
    if session:
        m["source"] = f"interop/pipecat/generate.py; the session: {session}"
    if a.rejected:
        m["expect"] = "rejected"
        m["invariant"] = a.rejected[0]
        m["line"] = int(a.rejected[1])
        m["patch"] = "none: unpatched Pipecat, this version has the bug itself"
    out = ROOT / "fixtures" / "generated" / f"pipecat@{m['version']}" / f"{a.name}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta["meta"] = corpus.nest(m)
    out.write_text("\n".join([json.dumps(meta)] + lines[1:]) + "\n")
    print(out.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
