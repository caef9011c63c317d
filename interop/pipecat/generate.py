#!/usr/bin/env python3
"""Generated sessions of Pipecat's real code, judged by ``turnfence check``.

    VENV/bin/python interop/pipecat/generate.py --seed S --count N --turnfence BIN --out DIR \\
        [--patch NAME | --patches all] [--no-shrink | --survey] [--jobs J] [--no-coverage]

Draws N sessions with hypothesis from seed S (``strategies.sessions``: the pipeline's
configuration and its timeline), runs each through the pinned Pipecat in virtual time
(``session.py``, ``vclock.py``: a forked child per session, so a planted patch and the
``time`` module's virtual clocks stay in it), writes its log to ``DIR/sessions/``, and judges
it with ``interop/oracle.py``: unpatched, the log must conform; patched, the patch's rule must
be found at or after its witness line, or, where the patch never fired, the log must conform; a
documented bug of Pipecat's own that the run witnessed (``known_bugs.py``) must be found at or
after its line, and accounts for its rule's findings there (tallied ``ok, documented stack bug``).
The log's meta line states all of it, so ``interop/tally.py`` judges a kept run alike.

Modes:

- default: judge all N (``--jobs`` at a time), tally the verdicts by cause, then shrink the
  first session of each failing cause with hypothesis (same seed, a test failing only for
  that cause) and write the shrunk session's log to ``DIR/counterexamples/CAUSE.jsonl`` with
  the session printed beside it (``.txt``). Hypothesis's database (``DIR/hypothesis-db``)
  replays the failures first next time.
- ``--no-shrink`` / ``--survey``: judge all N and tally, no shrinking.

Prints the number of sessions, the tallies (conforms / findings by invariant / input errors
by message stem / harness errors), per patch how many fired and were caught, the dimensions
hit and not hit, and the command that reproduces the run. Exit 0 only if every session
satisfied its oracle and (unless ``--no-coverage``, or N < COVERAGE_MIN) every dimension was
hit. The same seed gives the same sessions, logs and summary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import session as session_mod  # noqa: E402  (imports pipecat once; children fork from here)
from fakes import version_tuple  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: E402
from oracle import Known, Patched, judge  # noqa: E402
from patches import MIN_VERSION, PATCHES, RULES  # noqa: E402
from pipecat import __version__ as PIPECAT_VERSION  # noqa: E402
from strategies import Features, Session, sessions  # noqa: E402

import coverage_dims  # noqa: E402

COVERAGE_MIN = 1000
"""Below this many sessions an unhit dimension is reported but does not fail the run."""

FEATURES = Features.of(version_tuple())
from loguru import logger  # noqa: E402

logger.remove()
session_mod.preload()
session_mod.warm_up()


@dataclass
class Outcome:
    index: int
    session: Session
    log: Path
    verdict: dict[str, Any]
    cause: str
    witness: int | None
    errors: list[str]
    dims: set[str]
    cpu: float


def run_child(s: Session, log: Path) -> tuple[dict[str, Any], float]:
    """Fork a child that runs the session in virtual time and writes ``log``; returns its
    result file's contents and the child's CPU seconds."""
    result = log.with_suffix(".result.json")
    if result.exists():
        result.unlink()
    before = os.times()
    pid = os.fork()
    if pid == 0:  # the child
        code = 0
        try:
            sys.stdout.flush()
            session_mod.run_to_file(s, log, result)
        except BaseException as e:  # noqa: BLE001 - reported through the result file
            try:
                result.write_text(json.dumps({"errors": [f"harness crashed: {type(e).__name__}: {e}"], "notes": [], "witness": None}))
            except BaseException:  # noqa: BLE001
                pass
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if result.exists():
        out = json.loads(result.read_text())
    else:
        out = {"errors": [f"child exited with status {status} and no result"], "notes": [], "witness": None}
    result.unlink(missing_ok=True)
    return out, cpu


_STEM_NUM = re.compile(r"\d+(\.\d+)?")


def cause_of(verdict: dict[str, Any], errors: list[str], report_error: str | None) -> str:
    """A session's verdict as one short cause: ``ok``, ``finding:INVARIANT``, ``input_error:
    STEM`` (the message with numbers and quoted parts blanked), ``harness:STEM``."""
    if errors:
        return "harness:" + _STEM_NUM.sub("N", errors[0])[:80]
    if verdict["ok"]:
        return "ok"
    if verdict["status"] == "input_error":
        stem = _STEM_NUM.sub("N", re.sub(r"`[^`]*`|\"[^\"]*\"", "_", report_error or ""))
        return "input_error:" + stem[:90]
    names = sorted({f.get("invariant") or f.get("kind") or "?" for f in verdict["findings"]})
    if not names:
        return "missed:" + verdict["why"].split(":")[0]
    return "finding:" + "+".join(names)


def run_one(i: int, s: Session, out: Path, turnfence: str) -> Outcome:
    log = out / "sessions" / f"{i:05d}.jsonl"
    res, cpu = run_child(s, log)
    errors = list(res.get("errors") or [])
    witness = res.get("witness")
    if not log.exists():
        verdict = {"ok": False, "why": "no log", "status": "none", "findings": []}
        return Outcome(i, s, log, verdict, "harness:no log", witness, errors, set(), cpu)
    patched = Patched(s.patch, res.get("rule") or RULES[s.patch], witness) if s.patch else None
    known = [Known(k["name"], k["rule"], int(k["line"])) for k in res.get("known_bugs") or []]
    verdict = judge(turnfence, str(log), patched, known)
    err_msg = None
    if verdict["status"] == "input_error":
        from oracle import check

        rep = check(turnfence, str(log))
        err_msg = (rep.get("error") or {}).get("message", "")
        verdict["error"] = rep.get("error")
    cause = cause_of(verdict, errors, err_msg)
    if s.patch and cause != "ok" and not errors:
        cause = f"{s.patch}:{'missed' if witness else 'not fired, flagged'}:{cause}"
    if cause == "ok" and verdict.get("documented"):
        # as the oracle expects of Pipecat's own documented bugs (known_bugs.py): not a failure
        cause = "ok, documented stack bug: " + ", ".join(verdict["documented"])
    lines = [json.loads(x) for x in log.read_text().splitlines()[1:]]
    dims = coverage_dims.hit(s, lines, FEATURES, res.get("notes") or [])
    return Outcome(i, s, log, verdict, cause, witness, errors, dims, cpu)


def draw_sessions(seed_value: int, count: int, patch_names: list[str] | None) -> list[Session]:
    """N sessions drawn by hypothesis from the seed (its generate phase only, no database:
    the same seed gives the same sessions)."""
    drawn: list[Session] = []

    @seed(seed_value)
    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(sessions(FEATURES, patch_names))
    def collect(s: Session) -> None:
        drawn.append(s)

    collect()
    # hypothesis may draw a session twice; keep the draw order, count duplicates as drawn
    return drawn[:count]


def shrink(
    cause: str,
    seed_value: int,
    count: int,
    patch_names: list[str] | None,
    out: Path,
    turnfence: str,
) -> Outcome | None:
    """Shrink a failing cause: hypothesis runs the same seed again, failing only on sessions
    with that cause, and shrinks the first it meets."""
    found: dict[str, Outcome] = {}
    work = out / "shrinking"
    (work / "sessions").mkdir(parents=True, exist_ok=True)
    n = [0]

    class CauseFails(Exception):
        pass

    @seed(seed_value)
    @settings(
        max_examples=count,
        database=DirectoryBasedExampleDatabase(str(out / "hypothesis-db")),
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )
    @given(sessions(FEATURES, patch_names))
    def test(s: Session) -> None:
        n[0] += 1
        o = run_one(n[0], s, work, turnfence)
        if o.cause == cause:
            prev = found.get("best")
            if prev is None or len(s.to_json()) <= len(prev.session.to_json()):
                found["best"] = o
            raise CauseFails(cause)

    try:
        test()
    except CauseFails:
        pass
    except Exception as e:  # noqa: BLE001 - a flaky shrink is reported, not hidden
        print(f"generate: shrinking {cause}: {type(e).__name__}: {e}", file=sys.stderr)
    return found.get("best")


def safe(cause: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", cause)[:100].strip("_")


def replay(path: Path, out: Path, turnfence: str) -> int:
    """Run one session again: from a ``.txt`` the generator wrote (its ``session:`` line) or a
    kept fixture (its meta line's ``source``); writes ``out/sessions/00000.jsonl`` and ``.txt``."""
    text = path.read_text()
    js = None
    for ln in text.splitlines():
        if ln.startswith("session: "):
            js = ln[len("session: ") :]
        elif ln.startswith('{"meta"'):
            src = json.loads(ln)["meta"].get("fixture", {}).get("source", "")
            if "the session: " in src:
                js = src.split("the session: ", 1)[1]
        if js:
            break
    if js is None:
        print(f"generate: {path}: no session in it", file=sys.stderr)
        return 2
    s = Session.from_json(js)
    (out / "sessions").mkdir(parents=True, exist_ok=True)
    o = run_one(0, s, out, turnfence)
    o.log.with_suffix(".txt").write_text(
        s.describe() + f"\n\nverdict: {o.verdict['why']}\n" + f"session: {s.to_json()}\n"
    )
    print(f"{o.log}: {o.verdict['why']}")
    return 0 if o.verdict["ok"] else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--replay", type=Path, help="run the one session of this .txt or fixture again")
    ap.add_argument("--seed", type=int, required="--replay" not in sys.argv)
    ap.add_argument("--count", type=int, required="--replay" not in sys.argv)
    ap.add_argument("--turnfence", required=True)
    ap.add_argument("--out", type=Path, required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--patch", choices=sorted(PATCHES))
    g.add_argument("--patches", choices=["all"])
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--survey", action="store_true", help="judge all N and tally (= --no-shrink)")
    ap.add_argument("--cause", help="shrink only this cause (as the tally names it)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-coverage", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep every session's log (default: only failing ones)")
    args = ap.parse_args()

    out: Path = args.out
    if args.replay:
        return replay(args.replay, out, args.turnfence)
    (out / "sessions").mkdir(parents=True, exist_ok=True)
    usable = sorted(n for n in PATCHES if version_tuple() >= MIN_VERSION.get(n, ()))
    if args.patch and args.patch not in usable:
        ap.error(f"--patch {args.patch}: needs Pipecat {'.'.join(map(str, MIN_VERSION[args.patch]))}")
    patch_names = [args.patch] if args.patch else (usable if args.patches else None)
    t0 = time.monotonic()
    drawn = draw_sessions(args.seed, args.count, patch_names)

    outcomes: list[Outcome] = []
    if args.jobs <= 1:
        for i, s in enumerate(drawn):
            outcomes.append(run_one(i, s, out, args.turnfence))
    else:
        from concurrent.futures import ThreadPoolExecutor

        # threads only wait: each session is a forked child and a turnfence process
        with ThreadPoolExecutor(args.jobs) as ex:
            outcomes = list(ex.map(lambda p: run_one(p[0], p[1], out, args.turnfence), enumerate(drawn)))
    wall = time.monotonic() - t0

    tally: Counter[str] = Counter(o.cause for o in outcomes)
    dims_hit: Counter[str] = Counter()
    for o in outcomes:
        dims_hit.update(o.dims)
        if o.cause == "ok" and not args.keep:
            o.log.unlink(missing_ok=True)
        else:
            o.log.with_suffix(".txt").write_text(
                o.session.describe()
                + f"\n\nverdict: {o.verdict['why']}\n"
                + (f"errors: {o.errors}\n" if o.errors else "")
                + f"session: {o.session.to_json()}\n"
            )
    per_patch: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for o in outcomes:
        if o.session.patch:
            p = per_patch[o.session.patch]
            p[0] += 1
            if o.witness:
                p[1] += 1
                if o.verdict["ok"]:
                    p[2] += 1

    shrunk: dict[str, Outcome] = {}
    failing = sorted({o.cause for o in outcomes if not o.cause.startswith("ok")})
    if args.cause:
        failing = [c for c in failing if c == args.cause]
    if not (args.no_shrink or args.survey):
        cdir = out / "counterexamples"
        cdir.mkdir(parents=True, exist_ok=True)
        for cause in failing:
            best = shrink(cause, args.seed, args.count, patch_names, out, args.turnfence)
            if best is None:
                print(f"generate: {cause}: not reproduced while shrinking", file=sys.stderr)
                continue
            shrunk[cause] = best
            target = cdir / f"{safe(cause)}.jsonl"
            target.write_text(best.log.read_text())
            target.with_suffix(".txt").write_text(
                best.session.describe() + f"\n\nverdict: {best.verdict['why']}\nsession: {best.session.to_json()}\n"
            )

    all_dims = coverage_dims.dimensions(FEATURES)
    unhit = [d for d in all_dims if d not in dims_hit]
    cpu = sum(o.cpu for o in outcomes)
    bad = sum(1 for o in outcomes if not o.cause.startswith("ok"))

    print(f"pipecat@{PIPECAT_VERSION}: {len(outcomes)} sessions, seed {args.seed}, patch {args.patch or args.patches or 'none'}")
    print("verdicts:")
    for cause, n in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:6d}  {cause}")
    if per_patch:
        print("patches (sessions / fired / caught):")
        for name in sorted(per_patch):
            a, f, c = per_patch[name]
            print(f"  {name}: {a} / {f} / {c}")
    print(f"dimensions hit ({len(all_dims) - len(unhit)} of {len(all_dims)}):")
    for d in all_dims:
        print(f"  {dims_hit.get(d, 0):6d}  {d}")
    if unhit:
        print("dimensions not hit: " + ", ".join(unhit))
    for cause, o in sorted(shrunk.items()):
        print(f"shrunk {cause}: {out / 'counterexamples' / (safe(cause) + '.jsonl')} ({o.verdict['why']})")
    cmd = [
        "interop/pipecat/generate.py", "--seed", str(args.seed), "--count", str(args.count),
        "--turnfence", args.turnfence, "--out", str(out),
    ]
    if args.patch:
        cmd += ["--patch", args.patch]
    if args.patches:
        cmd += ["--patches", "all"]
    print("reproduce: VENV/bin/python " + shlex.join(cmd))
    print(
        f"(not part of the summary) wall {wall:.1f} s, child CPU {cpu:.1f} s, "
        f"{len(outcomes) / wall if wall else 0:.2f} sessions/s",
        file=sys.stderr,
    )
    coverage_fails = bool(unhit) and not args.no_coverage and len(outcomes) >= COVERAGE_MIN
    return 0 if bad == 0 and not coverage_fails else 1


if __name__ == "__main__":
    sys.exit(main())
