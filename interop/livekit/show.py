#!/usr/bin/env python3
"""Print an events.jsonl file one short line per event: line number, created_at relative to
the first event, the type and what matters of it. Reads only the file; needs no livekit.

    python3 interop/livekit/show.py fixtures/interop/livekit-agents@1.8.9/plain_reply.events.jsonl
"""

from __future__ import annotations

import json
import sys


def brief(ev: dict) -> str:
    t = ev.get("type")
    if t in ("agent_state_changed", "user_state_changed"):
        return f"{ev['old_state']} -> {ev['new_state']}"
    if t == "user_input_transcribed":
        return f"{'final' if ev['is_final'] else 'interim'} {ev['transcript']!r}"
    if t == "conversation_item_added":
        item = ev["item"]
        if item.get("type") == "message":
            text = " ".join(c for c in item.get("content", []) if isinstance(c, str))
            return f"{item['role']} interrupted={item.get('interrupted')} {text!r}"
        if item.get("type") == "agent_handoff":
            return f"handoff {item.get('old_agent_id')} -> {item.get('new_agent_id')}"
        return json.dumps(item)[:120]
    if t == "function_tools_executed":
        calls = [c["call_id"] + ":" + c["name"] for c in ev["function_calls"]]
        outs = [
            o["call_id"] + ("!" if o.get("is_error") else "") + "=" + repr(o.get("output"))[:40]
            for o in ev["function_call_outputs"]
        ]
        return f"calls={calls} outputs={outs}"
    if t == "tool_execution_updated":
        u = ev["update"]
        rest = {k: v for k, v in u.items() if k not in ("type", "function_call")}
        if "function_call" in u:
            rest["call_id"] = u["function_call"]["call_id"]
        return f"{u['type']} {json.dumps(rest)}"
    if t == "metrics_collected":
        return ev["metrics"].get("type", "")
    if t == "agent_false_interruption":
        return f"resumed={ev['resumed']}"
    if t == "speech_created":
        return f"source={ev['source']} user_initiated={ev['user_initiated']}"
    if t == "close":
        return f"reason={ev['reason']} error={ev['error']}"
    if t == "session_usage_updated":
        return ""
    return json.dumps({k: v for k, v in ev.items() if k not in ("type", "created_at")})[:140]


def main() -> None:
    for path in sys.argv[1:]:
        print(f"== {path}")
        t0 = None
        with open(path) as fh:
            for n, line in enumerate(fh, 1):
                ev = json.loads(line)
                if "meta" in ev:
                    continue
                ts = ev.get("created_at")
                if t0 is None and ts is not None:
                    t0 = ts
                rel = f"{ts - t0:7.3f}" if ts is not None and t0 is not None else "      -"
                print(f"{n:3d} {rel} {ev.get('type'):26s} {brief(ev)}")


if __name__ == "__main__":
    main()
