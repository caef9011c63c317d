#!/usr/bin/env python3
"""Compare recorded session logs with the committed ones, after normalizing what varies.

    python3 interop/livekit/compare.py EXPECTED_DIR ACTUAL_DIR
    python3 interop/livekit/compare.py --normalize FILE     # print FILE normalized

Both directories hold ``livekit-agents@VERSION/NAME.{events,report}.jsonl``. Each pair of
files must have the same number of lines, the same sequence of event types, and every line
equal once the fields listed below are normalized; anything else is a difference. Exit 1 and
print the first difference of each differing file; exit 0 when all are equal. Needs only the
standard library.

What is normalized, and nothing else:

- wall-clock times (``TIME_KEYS``) become ``"<time>"``;
- durations and latencies measured on the wall clock (``DURATION_KEYS``) become
  ``"<duration>"``;
- every number inside a metrics or usage object (``METRICS_KEYS``: a ``metrics_collected``
  event's ``metrics``, a chat message's ``metrics``, ``session_usage_updated``'s ``usage``, the
  report's ``usage``) becomes ``"<n>"``;
- ids generated at random (``ID_KEYS``) become ``"<id:N>"``, N numbering the distinct values
  in order of first appearance in the file, so that an id used twice must still be the same
  id twice.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TIME_KEYS = frozenset(
    {
        "created_at",
        "timestamp",
        "started_at",
        "started_speaking_at",
        "stopped_speaking_at",
        "audio_recording_started_at",
        "vad_speech_started_at",
    }
)
DURATION_KEYS = frozenset(
    {
        "duration",
        "duration_ms",
        "speech_duration",
        "ttft",
        "ttfb",
        "e2e_latency",
        "transcription_delay",
        "end_of_turn_delay",
        "end_of_utterance_delay",
        "on_user_turn_completed_delay",
        "playback_latency",
        "llm_node_ttft",
        "llm_node_ttfs",
        "llm_node_tps",
        "tts_node_ttfb",
    }
)
METRICS_KEYS = frozenset({"metrics", "usage"})
ID_KEYS = frozenset({"id", "item_id", "speech_id", "request_id", "segment_id"})


class Normalizer:
    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def _id(self, value: str) -> str:
        if value not in self.ids:
            self.ids[value] = f"<id:{len(self.ids) + 1}>"
        return self.ids[value]

    def __call__(self, obj: Any, key: str | None = None, in_metrics: bool = False) -> Any:
        if isinstance(obj, dict):
            inner = in_metrics or key in METRICS_KEYS
            return {k: self(v, k, inner) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self(v, key, in_metrics) for v in obj]
        if isinstance(obj, bool) or obj is None:
            return obj
        if isinstance(obj, (int, float)):
            if key in TIME_KEYS:
                return "<time>"
            if key in DURATION_KEYS:
                return "<duration>"
            if in_metrics:
                return "<n>"
            return obj
        if isinstance(obj, str) and key in ID_KEYS and obj:
            return self._id(obj)
        return obj


def normalized_lines(path: Path) -> list[Any]:
    norm = Normalizer()
    out = []
    with open(path) as fh:
        for line in fh:
            obj = json.loads(line)
            out.append(obj if "meta" in obj else norm(obj))
    return out


def _type(obj: Any) -> str:
    if isinstance(obj, dict):
        if "meta" in obj:
            return "meta"
        return str(obj.get("type", "report" if "events" in obj else "?"))
    return "?"


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if type(a) is not type(b):
        return f"{path or '.'}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a:
                return f"{path}.{k}: missing from the expected line, recorded {json.dumps(b[k])[:200]}"
            if k not in b:
                return f"{path}.{k}: expected {json.dumps(a[k])[:200]}, missing from the recorded line"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} entries expected, {len(b)} recorded"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if a != b:
        return f"{path or '.'}: expected {json.dumps(a)[:200]}, recorded {json.dumps(b)[:200]}"
    return None


def compare_files(expected: Path, actual: Path) -> str | None:
    a = normalized_lines(expected)
    b = normalized_lines(actual)
    ta, tb = [_type(x) for x in a], [_type(x) for x in b]
    if ta != tb:
        for i, (x, y) in enumerate(zip(ta, tb)):
            if x != y:
                return f"line {i + 1}: event {x!r} expected, {y!r} recorded (event sequence differs)"
        return f"{len(a)} lines expected, {len(b)} recorded (event sequence differs at line {min(len(a), len(b)) + 1})"  # noqa: E501
    for i, (x, y) in enumerate(zip(a, b)):
        d = first_difference(x, y)
        if d:
            return f"line {i + 1} ({ta[i]}): {d}"
    return None


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.glob("livekit-agents@*/*.jsonl")}


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--normalize":
        for obj in normalized_lines(Path(argv[1])):
            print(json.dumps(obj))
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    expected, actual = Path(argv[0]), Path(argv[1])
    fe, fa = files(expected), files(actual)
    problems: list[str] = []
    for name in sorted(fe - fa):
        problems.append(f"{name}: committed but not recorded")
    for name in sorted(fa - fe):
        problems.append(f"{name}: recorded but not committed (run ci/interop.sh --write)")
    for name in sorted(fe & fa):
        d = compare_files(expected / name, actual / name)
        if d:
            problems.append(f"{name}: {d}")
    for p in problems:
        print(f"interop: {p}")
    if problems:
        print(f"interop: {len(problems)} of {len(fe | fa)} files differ")
        return 1
    print(f"interop: {len(fe)} files equal after normalization")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
