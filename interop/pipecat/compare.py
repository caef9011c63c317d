#!/usr/bin/env python3
"""Compare recorded Pipecat logs with the committed ones, after normalizing what varies.

    python3 interop/pipecat/compare.py EXPECTED_DIR ACTUAL_DIR
    python3 interop/pipecat/compare.py --normalize FILE     # print FILE normalized

Both directories hold ``pipecat@VERSION/NAME.jsonl``. Audio lines (``TTSAudioRawFrame``,
synthesized or played) are pushed by the TTS and the output transport's audio task, each
running beside the others on its own timer: where one of them comes within a few milliseconds
of a frame pushed by another task, which of the two is logged first is not stable from run to
run (a played chunk every 40 ms makes that common). So the files are compared in two parts:

- every other line, in order: the same sequence of frame names, and every line equal once the
  fields below are normalized;
- the audio lines, by time: as many synthesized and as many played, and the n-th of each equal
  (normalized) to the n-th of the other file.

The meta line must be equal as it is, except ``line`` (the line that decides a planted bug),
which may point elsewhere as audio lines move: the two lines it points to must be equal
(normalized), and have as many lines of their kind before them.

What is normalized, and nothing else:

- ``t_ms``, the pipeline clock: equal within ``T_TOLERANCE_MS`` (scheduling jitter, which
  reaches tens of milliseconds when the machine is loaded; no two independent events of a
  scenario are scripted closer than 80 ms, and most are hundreds apart);
- ``id`` (Pipecat's process-wide frame counter, which counts every frame made, logged or not)
  becomes ``<id:N>``, N numbering the distinct values in order of first appearance;
- ``context_id`` (a uuid4 per TTS context) becomes ``<ctx:N>`` the same way, so a context
  used twice must still be one context.

Exit 1 and print the first difference of each differing file; exit 0 when all are equal.
Needs only the standard library.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import corpus  # noqa: E402

T_TOLERANCE_MS = 150
GLOB = "pipecat@*/*.jsonl"


class Normalizer:
    """Numbers ids in order of first appearance, separately in each part of the file (audio
    lines move, and would renumber every id after them)."""

    def __init__(self) -> None:
        self.maps: dict[str, dict[Any, str]] = {}

    def _number(self, key: str, value: Any, prefix: str) -> str:
        m = self.maps.setdefault(key, {})
        if value not in m:
            m[value] = f"<{prefix}:{len(m) + 1}>"
        return m[value]

    def __call__(self, line: dict[str, Any]) -> dict[str, Any]:
        out = dict(line)
        part = _part(line)
        if "id" in out:
            out["id"] = self._number(f"id/{part}", out["id"], "id")
        if "context_id" in out:
            # contexts are shared by frames of every part: numbered in the frames' order
            out["context_id"] = self._number("context_id", out["context_id"], "ctx")
        return out


def normalized_lines(path: Path) -> list[dict[str, Any]]:
    norm = Normalizer()
    out = []
    with open(path) as fh:
        for line in fh:
            obj = json.loads(line)
            out.append(obj if "meta" in obj else norm(obj))
    return out


def _name(obj: dict[str, Any]) -> str:
    return "meta" if "meta" in obj else str(obj.get("frame", "?"))


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    for k in list(a) + [k for k in b if k not in a]:
        if k not in a:
            return f".{k}: missing from the expected line, recorded {json.dumps(b[k])[:200]}"
        if k not in b:
            return f".{k}: expected {json.dumps(a[k])[:200]}, missing from the recorded line"
        if k == "t_ms" and "meta" not in a:
            if abs(a[k] - b[k]) > T_TOLERANCE_MS:
                return f".t_ms: expected {a[k]}, recorded {b[k]} (more than {T_TOLERANCE_MS} ms apart)"
            continue
        if a[k] != b[k]:
            return f".{k}: expected {json.dumps(a[k])[:200]}, recorded {json.dumps(b[k])[:200]}"
    return None


def _part(obj: dict[str, Any]) -> str:
    """Which part of a file a line is compared in: ``meta``, ``synthesized``, ``played``, or
    ``frames`` (everything else, compared in order)."""
    if "meta" in obj:
        return "meta"
    if obj.get("frame") == "TTSAudioRawFrame":
        return "played" if obj.get("played") else "synthesized"
    return "frames"


def _rank(lines: list[dict[str, Any]], index: int) -> tuple[str, int]:
    """The part of line ``index`` (0-based) and how many lines of that part come before it."""
    part = _part(lines[index])
    return part, sum(1 for x in lines[:index] if _part(x) == part)


def compare_files(expected: Path, actual: Path) -> str | None:
    a = normalized_lines(expected)
    b = normalized_lines(actual)
    for part in ("frames", "synthesized", "played"):
        pa = [(i, x) for i, x in enumerate(a) if _part(x) == part]
        pb = [(i, x) for i, x in enumerate(b) if _part(x) == part]
        na, nb = [_name(x) for _, x in pa], [_name(x) for _, x in pb]
        if na != nb:
            for (i, x), (j, y) in zip(pa, pb):
                if _name(x) != _name(y):
                    return f"line {i + 1} / {j + 1}: {_name(x)} expected, {_name(y)} recorded ({part} differ)"
            return f"{len(pa)} {part} lines expected, {len(pb)} recorded"
        for (i, x), (j, y) in zip(pa, pb):
            d = first_difference(x, y)
            if d:
                return f"line {i + 1} / {j + 1} ({_name(x)}): {d}"
    ma, mb = corpus.flat(a[0]["meta"]), corpus.flat(b[0]["meta"])
    la, lb = ma.pop("line", None), mb.pop("line", None)
    if ma != mb:
        return f"line 1 (meta): {first_difference(ma, mb)}"
    if (la is None) != (lb is None):
        return f"line 1 (meta): line expected {la}, recorded {lb}"
    if la is not None:
        if not (2 <= la <= len(a) and 2 <= lb <= len(b)):
            return f"line 1 (meta): line {la} / {lb} out of range"
        if _rank(a, la - 1) != _rank(b, lb - 1):
            return f"line 1 (meta): line {la} is {_rank(a, la - 1)}, recorded {lb} is {_rank(b, lb - 1)}"
    return None


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.glob(GLOB)}


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
