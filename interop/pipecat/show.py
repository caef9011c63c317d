#!/usr/bin/env python3
"""Print a recorded Pipecat log compactly: one line a frame, runs of audio folded.

    python3 interop/pipecat/show.py FILE.jsonl

Consecutive audio lines of the same kind (synthesized, or played) are folded into one:
``TTSAudioRawFrame x45 played 1800 ms``. Needs only the standard library.
"""

from __future__ import annotations

import json
import sys

SKIP = {"t_ms", "frame", "id", "src", "dst", "dir", "broadcast"}


def main(path: str) -> None:
    with open(path) as fh:
        rows = [json.loads(line) for line in fh]
    print(json.dumps(rows[0]["meta"], indent=1)[:2000])
    run: list[tuple[int, dict]] = []

    def flush() -> None:
        if not run:
            return
        first_n, first = run[0]
        total = sum(r["ms"] for _, r in run)
        kind = "played" if first.get("played") else "synthesized"
        print(
            f"{first_n:4d}-{run[-1][0]:<4d} {first['t_ms']:6d}-{run[-1][1]['t_ms']:<6d} "
            f"TTSAudioRawFrame x{len(run)} {kind} {total:.0f} ms  ({first['src']})"
        )
        run.clear()

    for n, r in enumerate(rows[1:], start=2):
        if r["frame"] == "TTSAudioRawFrame":
            if run and bool(run[-1][1].get("played")) != bool(r.get("played")):
                flush()
            run.append((n, r))
            continue
        flush()
        extra = {k: v for k, v in r.items() if k not in SKIP}
        b = " (both ways)" if r.get("broadcast") else ""
        print(f"{n:4d}      {r['t_ms']:6d}        {r['frame']} {r['dir']} {r['src']} -> {r['dst']}{b} {json.dumps(extra) if extra else ''}")
    flush()


if __name__ == "__main__":
    main(sys.argv[1])
