#!/usr/bin/env python3
"""Compare recorded Realtime app logs with the committed ones, after normalizing what varies.

    python3 interop/openai-realtime/compare.py EXPECTED_DIR ACTUAL_DIR [--t-tolerance MS]
    python3 interop/openai-realtime/compare.py --normalize FILE     # print FILE normalized

Both directories hold ``openai-realtime@VERSION/NAME.jsonl``. Each pair of files must have the
same lines: the same number, every line equal once normalized, in the same order but for the one
freedom below. What is normalized, and nothing else:

- ``t_ms``: a recorded time may differ from the committed one by at most ``--t-tolerance``
  milliseconds (default 100): the runs are real time;
- a server event's own ``event_id`` becomes ``<event_id>`` (nothing refers to it); the other
  generated ids (``item_``, ``resp_``, ``call_``, ``conv_``, ``sess_``, wherever they appear,
  inside error messages too) become ``<id:N>``, N numbering the distinct ids in order of first
  appearance in the file, so an id used twice must still be one id twice;
- order: a line written on a clock of its own — the audio device's (the player's
  ``playback.started`` and ``playback.played``, the microphone's ``input_audio_buffer.append``)
  or the server's stream (its audio, transcript and argument deltas) — may trade places with a
  line of another origin written within ``SWAP_MS`` (80) of it: the scripts keep these at least
  20 ms apart, and a loaded machine can stall one by more (60 ms seen). The lines of each origin (device,
  stream, the server's other events, the SDK's other client events, the app's other lines) keep
  their own order exactly, and any other two lines keep theirs. A rejected file's ``line`` must
  name the same line;
- in ``WALL_CLOCK`` files, where the SDK reads the played position from its wall clock, the
  truncation's ``audio_end_ms`` (sent, and echoed by the server) and the duration of the audio
  the server then returns for the item may differ by up to 40 ms (it is the time the server
  took to hear the user, on top of the position played).

Exit 1 and print the first difference of each differing file; exit 0 when all are equal. Needs
only the standard library.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import corpus  # noqa: E402

ID = re.compile(r"\b(?:event|item|resp|call|conv|sess)_[A-Za-z0-9]{22}\b")
DEFAULT_TOLERANCE_MS = 100
SWAP_MS = 80
WALL_CLOCK = {"bug_truncate_from_wall_clock": 40}
DEVICE = {("app", "playback.started"), ("app", "playback.played"), ("client", "input_audio_buffer.append")}
STREAM = {
    ("server", "response.output_audio.delta"),
    ("server", "response.output_audio_transcript.delta"),
    ("server", "response.function_call_arguments.delta"),
}
TIMED = {"device", "stream"}


class Near:
    """A value compared within a tolerance."""

    def __init__(self, value: int, within: int) -> None:
        self.value, self.within = value, within

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Near) and abs(self.value - other.value) <= max(self.within, other.within)

    def __repr__(self) -> str:
        return f"{self.value} (within {self.within})"


class Normalizer:
    def __init__(self, wall_clock: int | None) -> None:
        self.ids: dict[str, str] = {}
        self.wall_clock = wall_clock

    def _id(self, m: re.Match[str]) -> str:
        value = m.group(0)
        if value not in self.ids:
            self.ids[value] = f"<id:{len(self.ids) + 1}>"
        return self.ids[value]

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self(v) for v in obj]
        if isinstance(obj, str) and len(obj) < 4096:
            return ID.sub(self._id, obj)
        return obj

    def line(self, obj: dict[str, Any]) -> dict[str, Any]:
        e = obj.get("event", {})
        if obj.get("dir") == "server" and isinstance(e.get("event_id"), str):
            e["event_id"] = "<event_id>"
        if self.wall_clock is not None:
            if e.get("type") in ("conversation.item.truncate", "conversation.item.truncated"):
                e["audio_end_ms"] = Near(e["audio_end_ms"], self.wall_clock)
            elif e.get("type") == "conversation.item.retrieved":
                for part in e.get("item", {}).get("content", []) or []:
                    if isinstance(part.get("audio"), str):
                        ms = len(base64.b64decode(part["audio"])) // 48
                        part["audio"] = Near(ms, self.wall_clock)
        return self(obj)


def origin(line: dict[str, Any]) -> str:
    key = (line.get("dir"), line.get("event", {}).get("type"))
    if key in DEVICE:
        return "device"
    if key in STREAM:
        return "stream"
    return str(line.get("dir"))


def read(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    norm = Normalizer(WALL_CLOCK.get(path.stem))
    meta = None
    lines = []
    with open(path) as fh:
        for raw in fh:
            obj = json.loads(raw)
            if "meta" in obj:
                meta = obj
                continue
            t = obj.pop("t_ms", None)
            obj = norm.line(obj)
            obj["t_ms"] = t
            lines.append(obj)
    return meta, lines


def kind(line: dict[str, Any]) -> str:
    return f"{line.get('dir')} {line.get('event', {}).get('type')}"


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if isinstance(a, Near) or isinstance(b, Near):
        return None if a == b else f"{path}: committed {a!r}, recorded {b!r}"
    if type(a) is not type(b):
        return f"{path or '.'}: {json.dumps(a)[:160]} != {json.dumps(b)[:160]}"
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a:
                return f"{path}.{k}: missing from the committed line, recorded {json.dumps(b[k])[:160]}"
            if k not in b:
                return f"{path}.{k}: committed {json.dumps(a[k])[:160]}, missing from the recorded line"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} entries committed, {len(b)} recorded"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if a != b:
        return f"{path or '.'}: committed {json.dumps(a)[:160]}, recorded {json.dumps(b)[:160]}"
    return None


def pair_lines(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[int], str | None]:
    """For each committed line, the index of its recorded counterpart: the k-th line of an
    origin in one file is the k-th line of that origin in the other."""
    where: dict[str, list[int]] = {}
    for j, y in enumerate(b):
        where.setdefault(origin(y), []).append(j)
    seen: dict[str, int] = {}
    out = []
    for i, x in enumerate(a):
        o = origin(x)
        k = seen.get(o, 0)
        seen[o] = k + 1
        if k >= len(where.get(o, [])):
            return out, f"line {i + 2} ({kind(x)}): the recording has only {k} {o} lines"
        out.append(where[o][k])
    for o, js in where.items():
        if len(js) != seen.get(o, 0):
            extra = b[js[seen.get(o, 0)]]
            return out, f"the recording has {len(js) - seen.get(o, 0)} more {o} lines, from line {js[seen.get(o, 0)] + 2} ({kind(extra)})"  # noqa: E501
    return out, None


def compare_files(expected: Path, actual: Path, tolerance: int) -> str | None:
    ma, a = read(expected)
    mb, b = read(actual)
    pos, d = pair_lines(a, b)
    if d:
        return d
    for i, x in enumerate(a):
        y = b[pos[i]]
        if kind(x) != kind(y):
            return f"line {i + 2}: {kind(x)!r} committed, {kind(y)!r} recorded at line {pos[i] + 2}"
    # cross-origin order: only a device line and a line of another origin, close in time, may swap
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if pos[i] < pos[j]:
                continue
            close = abs((a[j]["t_ms"] or 0) - (a[i]["t_ms"] or 0)) <= SWAP_MS
            timed = origin(a[i]) in TIMED or origin(a[j]) in TIMED
            if not (close and timed):
                return (
                    f"lines {i + 2} ({kind(a[i])}) and {j + 2} ({kind(a[j])}) are recorded in the "
                    f"other order (lines {pos[i] + 2} and {pos[j] + 2})"
                )
    if ma is not None and mb is not None:
        ma, mb = corpus.flat(ma["meta"]), corpus.flat(mb["meta"])
        la, lb = ma.pop("line", None), mb.pop("line", None)
        if ma != mb:
            return f"line 1 (meta): {first_difference(ma, mb)}"
        if la is not None and (lb is None or pos[la - 2] + 2 != lb):
            return f"line 1 (meta): line {lb} recorded, the committed line {la} is recorded at {pos[la - 2] + 2}"
    elif ma != mb:
        return "line 1 (meta): one file has no meta line"
    for i, x in enumerate(a):
        y = dict(b[pos[i]])
        x = dict(x)
        tx, ty = x.pop("t_ms"), y.pop("t_ms")
        if not isinstance(tx, int) or not isinstance(ty, int):
            return f"line {i + 2} ({kind(x)}): t_ms {tx!r} committed, {ty!r} recorded"
        if abs(tx - ty) > tolerance:
            return f"line {i + 2} ({kind(x)}): t_ms {ty} recorded, {tx} committed: more than {tolerance} ms apart"
        d = first_difference(x, y)
        if d:
            return f"line {i + 2} ({kind(x)}): {d}"
    return None


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.glob("openai-realtime@*/*.jsonl")}


def main(argv: list[str]) -> int:
    tolerance = DEFAULT_TOLERANCE_MS
    if "--t-tolerance" in argv:
        i = argv.index("--t-tolerance")
        tolerance = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    if len(argv) == 2 and argv[0] == "--normalize":
        meta, lines = read(Path(argv[1]))
        if meta is not None:
            print(json.dumps(meta))
        for obj in lines:
            print(json.dumps(obj, default=repr))
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
        d = compare_files(expected / name, actual / name, tolerance)
        if d:
            problems.append(f"{name}: {d}")
    for p in problems:
        print(f"interop: {p}")
    if problems:
        print(f"interop: {len(problems)} of {len(fe | fa)} openai-realtime files differ")
        return 1
    print(f"interop: {len(fe)} openai-realtime files equal after normalization (t_ms within {tolerance} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
