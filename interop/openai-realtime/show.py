#!/usr/bin/env python3
"""Print a recorded log compactly: one line per event, base64 audio replaced by its length.

    python3 interop/openai-realtime/show.py FILE.jsonl [--all]

Audio deltas and transcript deltas are folded into runs unless ``--all`` is given. Needs only
the standard library.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

SKIP_KEYS = {"event_id", "content_index", "output_index", "object"}


def brief(e: dict[str, Any]) -> str:
    out = []
    for k, v in e.items():
        if k in SKIP_KEYS or k == "type":
            continue
        if k in ("delta", "audio") and isinstance(v, str) and len(v) > 64:
            v = f"<{len(base64.b64decode(v)) // 48} ms>"
        elif k == "session":
            td = v.get("audio", {}).get("input", {}).get("turn_detection")
            v = {"turn_detection": td}
        elif k == "response" and isinstance(v, dict):
            v = {x: v.get(x) for x in ("id", "status", "status_details", "conversation_id", "metadata") if v.get(x) is not None}
        elif k == "item" and isinstance(v, dict):
            v = {x: y for x, y in v.items() if x not in ("object",)}
            for c in v.get("content", []) or []:
                if isinstance(c.get("audio"), str):
                    c["audio"] = f"<{len(base64.b64decode(c['audio'])) // 48} ms>"
        out.append(f"{k}={json.dumps(v, separators=(',', ':'))}")
    return " ".join(out)


def main(argv: list[str]) -> int:
    show_all = "--all" in argv
    path = [a for a in argv if not a.startswith("--")][0]
    run: list[str] = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            d = json.loads(line)
            if "meta" in d:
                print(f"{n:4} META {json.dumps(d['meta'])}")
                continue
            e = d["event"]
            kind = e.get("type")
            if not show_all and kind in ("response.output_audio.delta", "response.output_audio_transcript.delta"):
                run.append(f"{n}")
                if kind == "response.output_audio.delta":
                    print(f"{n:4} {d['t_ms']:6} {d['dir']:6} {kind} item={e['item_id'][-6:]} {len(base64.b64decode(e['delta'])) // 48} ms")
                continue
            print(f"{n:4} {d['t_ms']:6} {d['dir']:6} {kind} {brief(e)}"[:400])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
