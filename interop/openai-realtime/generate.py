#!/usr/bin/env python3
"""Generated sessions of the OpenAI Agents SDK's realtime client, judged by ``turnfence check``.

    PY=target/interop/openai-realtime/venv-0.24.0/bin/python
    $PY interop/openai-realtime/generate.py --seed 1 --count 200 --turnfence /work/bin/turnfence \\
        --out /tmp/gen [--patch NAME | --patches all] [--no-shrink | --survey] [--jobs 2] \\
        [--no-coverage]

Each session is drawn by hypothesis (``strategies.sessions``) from the seed, run through the
SDK's own code in virtual time (``vsession``: the harness's app and the scripted server, one
asyncio loop on a virtual clock, an in-memory websocket), written to ``OUT/NNNNN.jsonl`` with
the harness's meta line, and judged by ``interop/oracle.py``:

- unpatched (the default) the log must conform;
- with ``--patch NAME`` (or ``--patches all``, the patch drawn per session) the planted
  regression records a *witness* (the first log line it made differ) when it changed what the
  SDK did; the log must then have the patch's rule among its findings at or after that line,
  and without a witness it must conform.

Modes:

- default: hypothesis runs the sessions one by one and stops at the first that fails its oracle;
  it shrinks it (hypothesis's database, ``OUT/.hypothesis``, replays it first next time) and the
  shrunk session's log goes to ``OUT/counterexamples/`` beside its readable scenario (``.txt``);
- ``--no-shrink`` / ``--survey`` (the same): all N sessions are drawn first, then run (``--jobs``
  processes) and judged, and the verdicts are tallied by cause without stopping.

The summary at the end (sessions, verdicts by cause, per patch fired and caught, dimensions hit
and not hit, the command to reproduce) is the same bytes for the same arguments. Exit 0 only if
every session satisfied its oracle and, with ``--count`` at least ``COVERAGE_MIN`` (or without
``--no-coverage``... see ``--help``), every dimension was hit.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import harness  # noqa: E402
import corpus  # noqa: E402
import known_bugs  # noqa: E402
import oracle  # noqa: E402
import patches  # noqa: E402
import script  # noqa: E402
import strategies  # noqa: E402
import vsession  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

COVERAGE_MIN = 200
"""With fewer sessions than this a dimension may be legitimately unhit: coverage is reported,
not required (``--coverage`` requires it anyway)."""

DIMENSIONS = [
    "server_vad",
    "server_vad_no_interrupt",
    "push_to_talk",
    "barge_in_mid_stream",
    "barge_in_after_done",
    "barge_in_before_audio",
    "app_interrupt",
    "cancel_sent",
    "cancel_crosses_done",
    "truncate",
    "truncate_refused",
    "out_of_band",
    "out_of_band_beside_default",
    "tool_answered",
    "tool_answered_late",
    "tool_call_cancelled",
    "create_refused",
    "reply_without_audio",
    "player_played",
    "player_cleared",
    "delta_after_clear",
    "hangup_mid_reply",
    "hangup_mid_tool",
    "webrtc_output_audio_buffer",
    "link_latency",
]


# -- patches in one process ------------------------------------------------------------------


def _patched_classes() -> list[type]:
    from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel
    from agents.realtime.session import RealtimeSession

    # the player: a patch's witness may read what it plays (out_of_band_create_at_once)
    return [OpenAIRealtimeWebSocketModel, RealtimeSession, harness.Player]


class Planted:
    """One patch applied for one session, then taken back (the classes' attributes restored)."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.saved: list[tuple[type, dict[str, Any]]] = []

    def __enter__(self) -> Planted:
        if self.name:
            self.saved = [(c, dict(vars(c))) for c in _patched_classes()]
            patches.PATCHES[self.name]()
        return self

    def __exit__(self, *exc: Any) -> None:
        known_bugs.restore(self.saved)


# -- one session -------------------------------------------------------------------------------


def write_log(path: Path, session: strategies.Session, name: str, lines: list[dict[str, Any]],
              note: str | None = None, witness: int | None = None,
              known: list[dict[str, Any]] | None = None) -> None:
    sc = session.scenario(name)
    m = {"meta": corpus.flat(harness.meta(sc, None)["meta"])}
    m["meta"]["story"] = "a generated session (interop/openai-realtime/generate.py)"
    if session.patch:
        m["meta"]["patch"] = session.patch
        m["meta"]["invariant"] = patches.RULES[session.patch]
        if witness is not None:
            # the patch fired: its rule is expected at or after its witness line
            m["meta"]["expect"] = "rejected"
            m["meta"]["line"] = witness
    if known:
        # documented bugs of the SDK as released that this run witnessed (known_bugs.py): each
        # one's rule is expected at or after its line
        m["meta"]["expect"] = "rejected"
        m["meta"]["known_bugs"] = known
    if note:
        m["meta"]["story"] += ". " + note
    with open(path, "w") as fh:
        fh.write(json.dumps({"meta": corpus.nest(m["meta"])}) + "\n")
        for x in lines:
            fh.write(json.dumps(x) + "\n")


def run_one(session: strategies.Session, name: str) -> tuple[list[dict[str, Any]], list[str], int | None, dict[str, Any]]:
    """Run the session (its patch planted); its lines, errors, witness line and facts."""
    witness: list[int] = []
    box: dict[str, Any] = {}

    def hook(where: str) -> None:
        lines = box["log"].lines
        # the meta line is line 1: the last line written is len+1, the next one len+2
        line = len(lines) + (1 if where == "last" else 2)
        if not witness:
            witness.append(line)

    patches.WITNESS = hook
    orig_log = harness.Log

    class Log(orig_log):  # type: ignore[misc,valid-type]
        def __init__(self, clock: Any) -> None:
            super().__init__(clock)
            box["log"] = self

    vsession.harness.Log = Log
    try:
        with Planted(session.patch), known_bugs.Watch(box) as watch:
            lines, errors = vsession.run(session, name, box)
    finally:
        vsession.harness.Log = orig_log
        patches.WITNESS = None
    facts = {"tool_running_at_hangup": box.get("tools_at_hangup", False), "known_bugs": watch.witnesses()}
    return lines, errors, (witness[0] if witness else None), facts


def dimensions(session: strategies.Session, lines: list[dict[str, Any]]) -> set[str]:
    """Which dimensions this session's log shows it reached (not what was drawn)."""
    hit: set[str] = set()
    td = session.turn_detection
    ev = [(x["dir"], x["event"]) for x in lines]
    kinds = [(d, e.get("type")) for d, e in ev]
    speech = [i for i, (d, k) in enumerate(kinds) if k == "input_audio_buffer.speech_started"]
    if td is not None and speech:
        hit.add("server_vad" if td.get("interrupt_response") else "server_vad_no_interrupt")
    if td is None and any(k == "input_audio_buffer.committed" for _, k in kinds):
        hit.add("push_to_talk")
    done_resp: set[str] = set()
    created: dict[str, dict[str, Any]] = {}
    deltas: dict[str, int] = collections.Counter()
    streaming: set[str] = set()
    playing = False
    cleared_items: set[str] = set()
    open_calls: set[str] = set()
    for i, (d, e) in enumerate(ev):
        k = e.get("type")
        if d == "server" and k == "response.created":
            created[e["response"]["id"]] = e["response"]
            streaming.add(e["response"]["id"])
            if e["response"].get("conversation_id") is None:
                hit.add("out_of_band")
                if any(r.get("conversation_id") for r in created.values()):
                    hit.add("out_of_band_beside_default")
        elif d == "server" and k == "response.done":
            r = e["response"]
            done_resp.add(r["id"])
            streaming.discard(r["id"])
            if not deltas.get(r["id"]):
                hit.add("reply_without_audio")
            for o in r.get("output") or []:
                if o.get("type") == "function_call" and o.get("status") == "incomplete":
                    hit.add("tool_call_cancelled")
        elif d == "server" and k == "response.output_audio.delta":
            deltas[e["response_id"]] += 1
            if e["item_id"] in cleared_items:
                hit.add("delta_after_clear")
        elif d == "server" and k == "input_audio_buffer.speech_started":
            if playing and streaming:
                hit.add("barge_in_mid_stream")
            elif playing:
                hit.add("barge_in_after_done")
            elif streaming:
                hit.add("barge_in_before_audio")
        elif d == "app" and k == "playback.started":
            playing = True
        elif d == "app" and k == "playback.played":
            hit.add("player_played")
        elif d == "app" and k == "playback.cleared":
            playing = False
            cleared_items.add(e["item_id"])
            if e.get("cleared_ms", 0) > 0 or e.get("audio_end_ms", 0) > 0:
                hit.add("player_cleared")
        elif d == "client" and k == "response.cancel":
            hit.add("cancel_sent")
        elif d == "client" and k == "conversation.item.truncate":
            hit.add("truncate")
        elif d == "client" and k == "conversation.item.create" and e["item"].get("type") == "function_call_output":
            hit.add("tool_answered")
            if streaming:
                hit.add("tool_answered_late")
        elif d == "server" and k == "error":
            code = e["error"].get("code")
            if code == "response_cancel_not_active":
                hit.add("cancel_crosses_done")
            elif code == "invalid_value":
                hit.add("truncate_refused")
            elif code == "conversation_already_has_active_response":
                hit.add("create_refused")
        elif d == "server" and str(k).startswith("output_audio_buffer."):
            hit.add("webrtc_output_audio_buffer")
        if d == "server" and k == "response.output_item.added" and e["item"].get("type") == "function_call":
            open_calls.add(e["item"]["id"])
    if any(d == "client" and k == "response.cancel" for d, k in kinds) and any(
        k == "conversation.item.truncate" for _, k in kinds
    ) and td is None:
        hit.add("app_interrupt")
    if session.actions and any(a.do == "interrupt" for a in session.actions) and any(
        d == "client" and k in ("conversation.item.truncate", "response.cancel") for d, k in kinds
    ):
        hit.add("app_interrupt")
    if streaming and session.hangup_ms is not None:
        hit.add("hangup_mid_reply")
    if session.up_ms or session.down_ms:
        hit.add("link_latency")
    return hit


def judge_one(args: tuple[int, strategies.Session, str, str]) -> dict[str, Any]:
    index, session, out, turnfence = args
    name = f"{index:05d}"
    t0 = time.process_time()
    lines, errors, witness, facts = run_one(session, name)
    cpu = time.process_time() - t0
    path = Path(out) / f"{name}.jsonl"
    write_log(path, session, name, lines, witness=witness, known=facts["known_bugs"])
    patched = None
    if session.patch:
        patched = oracle.Patched(session.patch, patches.RULES[session.patch], witness)
    known = [oracle.Known(k["name"], k["rule"], k["line"]) for k in facts["known_bugs"]]
    if errors:
        verdict = {"ok": False, "why": "run failed: " + "; ".join(errors), "status": "run_error", "findings": []}
    else:
        verdict = oracle.judge(turnfence, str(path), patched, known)
    dims = dimensions(session, lines)
    if facts.get("tool_running_at_hangup"):
        dims.add("hangup_mid_tool")
    return {"index": index, "path": str(path), "verdict": verdict, "witness": witness, "dims": sorted(dims),
            "patch": session.patch, "cpu": cpu, "report": None}


def cause(v: dict[str, Any]) -> str:
    """The verdict's cause, as tallied: the findings' invariants, or the input error's stem."""
    if v["status"] == "conforms":
        return "conforms"
    if v["ok"] and v.get("documented"):
        return "documented stack bug: " + ", ".join(v["documented"])
    if v["status"] == "run_error":
        return "run error: " + re.sub(r"\d+", "N", v["why"])[:120]
    if v["status"] == "input_error":
        stem = re.sub(r"line \d+", "line N", v["why"])
        stem = re.sub(r"\d+", "N", stem)
        stem = re.sub(r'"[^"]*"', '"…"', stem)
        return "input error: " + stem.split(": ", 2)[-1][:140]
    names = sorted({f.get("invariant") or f.get("kind") for f in v["findings"]})
    return "findings: " + ", ".join(names)


# -- drawing ----------------------------------------------------------------------------------


def draw_sessions(seed_: int, count: int, patch_names: list[str] | None) -> list[strategies.Session]:
    drawn: list[strategies.Session] = []

    @seed(seed_)
    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(strategies.sessions(patch_names))
    def collect(s: strategies.Session) -> None:
        drawn.append(s)

    collect()
    return drawn[:count]


# -- the run ----------------------------------------------------------------------------------


def summary(args: argparse.Namespace, results: list[dict[str, Any]], shrunk: str | None) -> tuple[str, bool]:
    out = []
    ok_all = all(r["verdict"]["ok"] for r in results)
    out.append(f"sessions: {len(results)}")
    tally = collections.Counter(cause(r["verdict"]) for r in results)
    out.append("verdicts:")
    for c, n in sorted(tally.items(), key=lambda x: (-x[1], x[0])):
        out.append(f"  {n:6d}  {c}")
    bad = collections.Counter(cause(r["verdict"]) for r in results if not r["verdict"]["ok"])
    out.append(f"oracle not satisfied: {sum(bad.values())}")
    for c, n in sorted(bad.items(), key=lambda x: (-x[1], x[0])):
        first = next(r for r in results if not r["verdict"]["ok"] and cause(r["verdict"]) == c)
        out.append(f"  {n:6d}  {c}  (first: {Path(first['path']).name}: {first['verdict']['why'][:160]})")
    if any(r["patch"] for r in results):
        out.append("patches (sessions / fired / caught / fired and missed / not fired but flagged):")
        for p in sorted({r["patch"] for r in results if r["patch"]}):
            rs = [r for r in results if r["patch"] == p]
            fired = [r for r in rs if r["witness"] is not None]
            caught = [r for r in fired if r["verdict"]["ok"]]
            quiet_bad = [r for r in rs if r["witness"] is None and not r["verdict"]["ok"]]
            out.append(f"  {p}: {len(rs)} / {len(fired)} / {len(caught)} / {len(fired) - len(caught)} / {len(quiet_bad)}")
    hit = collections.Counter(d for r in results for d in r["dims"])
    out.append("dimensions hit (sessions):")
    for d in DIMENSIONS:
        out.append(f"  {hit.get(d, 0):6d}  {d}")
    unhit = [d for d in DIMENSIONS if not hit.get(d)]
    out.append(f"dimensions not hit: {', '.join(unhit) if unhit else 'none'}")
    need = (args.count >= COVERAGE_MIN or args.coverage) and not args.no_coverage
    if not need:
        out.append(f"coverage not required (--count below {COVERAGE_MIN}, or --no-coverage)")
    if shrunk:
        out.append(f"shrunk counterexample: {shrunk}")
    cmd = f"generate.py --seed {args.seed} --count {args.count}"
    if args.patch:
        cmd += f" --patch {args.patch}"
    if args.patches:
        cmd += f" --patches {args.patches}"
    if args.no_shrink:
        cmd += " --no-shrink"
    out.append(f"reproduce: {cmd} --turnfence BIN --out DIR")
    ok = ok_all and (not need or not unhit)
    out.append("result: " + ("ok" if ok else "FAILED"))
    return "\n".join(out) + "\n", ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--turnfence", required=True)
    ap.add_argument("--out", type=Path, required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--patch", choices=sorted(patches.PATCHES))
    g.add_argument("--patches", choices=["all"])
    ap.add_argument("--no-shrink", action="store_true", help="judge all N, tally, do not stop or shrink")
    ap.add_argument("--survey", dest="no_shrink", action="store_true", help="the same as --no-shrink")
    ap.add_argument("--jobs", type=int, default=1, help="processes for --no-shrink")
    ap.add_argument("--no-coverage", action="store_true", help="report dimensions, do not require them")
    ap.add_argument("--coverage", action="store_true", help=f"require every dimension even below {COVERAGE_MIN}")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    patch_names = [args.patch] if args.patch else (sorted(patches.PATCHES) if args.patches else None)
    t0 = time.monotonic()
    shrunk = None
    if args.no_shrink:
        drawn = draw_sessions(args.seed, args.count, patch_names)
        work = [(i, s, str(args.out), args.turnfence) for i, s in enumerate(drawn)]
        if args.jobs > 1:
            with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
                results = pool.map(judge_one, work, chunksize=4)
        else:
            results = [judge_one(w) for w in work]
    else:
        results = []
        failing: list[tuple[dict[str, Any], strategies.Session]] = []

        @seed(args.seed)
        @settings(max_examples=args.count, deadline=None, suppress_health_check=list(HealthCheck),
                  database=_database(args.out), print_blob=False, report_multiple_bugs=False)
        @given(strategies.sessions(patch_names))
        def session_satisfies_its_oracle(s: strategies.Session) -> None:
            r = judge_one((len(results), s, str(args.out), args.turnfence))
            results.append(r)
            if not r["verdict"]["ok"]:
                failing.append((r, s))
                raise AssertionError(r["verdict"]["why"])

        try:
            session_satisfies_its_oracle()
        except AssertionError:
            r, s = failing[-1]  # hypothesis replays the shrunk example last
            shrunk = keep_counterexample(args.out, r, s)
    wall = time.monotonic() - t0
    text, ok = summary(args, results, shrunk)
    sys.stdout.write(text)
    cpu = sum(r["cpu"] for r in results)
    # timing goes to stderr: the summary on stdout is the same bytes for the same arguments
    print(f"time: {wall:.1f} s wall, {cpu:.1f} s CPU in the sessions, "
          f"{len(results) / wall if wall else 0:.1f} sessions/s", file=sys.stderr)
    return 0 if ok else 1


def _database(out: Path) -> Any:
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(str(out / ".hypothesis"))


def keep_counterexample(out: Path, r: dict[str, Any], s: strategies.Session) -> str:
    d = out / "counterexamples"
    d.mkdir(parents=True, exist_ok=True)
    src = Path(r["path"])
    dst = d / src.name
    dst.write_text(src.read_text())
    (d / (src.stem + ".txt")).write_text(s.describe() + "\n\nverdict: " + r["verdict"]["why"] + "\n")
    return str(dst)


if __name__ == "__main__":
    sys.exit(main())
