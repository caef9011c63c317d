"""The house's layout, held: no Rust file of the workspace longer than 600 lines, no file
that imports one that imports it back, no import across a boundary `NO_IMPORT` names (the
engine, `trace/`, imports nothing from the dialects, `dialect/`: it knows them by one trait), and
no stack named outside its folder: in `checks/src`, a real stack's name (`STACKS`, case aside,
comments and tests included) stands only in its dialect's folder, the registry, the model's
profiles' own names (`Profile::Pipecat`), and the files `STACK_NAMES_ALLOWED` lists, each with
why. `python3 ci/layout.py --self-test` shows that rule failing on a file made to break it.

A file's imports are the paths it names that start with `crate::`, `super::` or `self::` (in
`use` items or inline), and its own child modules it names (`one_pass::read`); each is resolved
to the file of the longest module it reaches. A module root (`mod.rs`, `lib.rs`, `main.rs`) is a
folder's table of contents — it declares and re-exports what the files under it define, and
they name what it declares — so edges to and from roots are not counted; a file with a folder
of its own (`canonical.rs` beside `canonical/`) is a file like any other. Test modules
(`#[cfg(test)] mod tests { … }` to the end of the file) are left out.

Exit 0 when all hold; 1, listing each file too long, each circle (every file in it, and the
imports that close it) and each stack's name out of its folder, when not.
"""

import os
import re
import sys

MAX_LINES = 600
CRATE_ROOTS = ["model/src", "checks/src"]
SIZED = ["model", "checks"]
# Floors that must not import another (crate root, from, to): the engine knows dialects through
# its one trait, and the registry is above it.
NO_IMPORT = [("checks/src", "trace", "dialect")]
# A real stack's names (matched case aside) and the one folder of `checks/src` that names it.
STACK_ROOT = "checks/src"
STACKS = {
    "livekit": "dialect/livekit/",
    "pipecat": "dialect/pipecat/",
    "realtime": "dialect/openai_realtime/",
    "openai": "dialect/openai_realtime/",
}
# Named by right: the registry lists every stack, one line each.
STACK_REGISTRY = ["dialect/mod.rs"]
# Words that hold a stack's name by right, each with why: the model's profiles are the model's
# own names for the stacks' rules; others are a stack's own words that contain another's name.
NAMED_BY_RIGHT = [
    (r"Profile::(OpenaiRealtime|LivekitAgents|Pipecat)\b", "a model's profile, the model's name"),
    (r"\brealtime_audio\b", "the lab log's audio mode, the lab's own word"),
    (r"\brealtime_llm\b", "a LiveKit turn-detection mode, LiveKit's own word"),
]
BY_RIGHT = re.compile("|".join(pattern for pattern, _ in NAMED_BY_RIGHT))
# Files of `checks/src` outside a stack's folder that still name a stack, and why: each a piece
# of a stack's knowledge not yet moved into its folder or behind the registry (issue 53).
STACK_NAMES_ALLOWED = {
}


def module_files(root):
    """Module path (a tuple) -> file, for one crate's source folder."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                out[tuple(parts)] = path
    return out


def code_of(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"//[^\n]*", "", text)
    test = re.search(r"#\[cfg\(test\)\]\s*(pub\s+)?mod\s+tests\s*\{", text)
    return text[: test.start()] if test else text


def is_root(path):
    return os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")


def resolve(modules, here, segments):
    if segments[0] == "crate":
        base, rest = (), segments[1:]
    else:
        base, rest = here, segments
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    for n in range(len(rest), -1, -1):
        if base + tuple(rest[:n]) in modules:
            return base + tuple(rest[:n])
    return None


def imports(modules):
    edges = {m: set() for m in modules}
    path_re = re.compile(
        r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)(?:::\{([^;]*?)\})?"
    )
    for module, path in modules.items():
        code = code_of(path)
        for found in path_re.finditer(code):
            head = found.group(1).split("::")
            targets = [head]
            for part in (found.group(2) or "").split(","):
                part = part.strip().split(" as ")[0].strip().lstrip("{").strip()
                if part and part != "self":
                    targets.append(head + [s for s in part.split("::") if s])
            for target in targets:
                to = resolve(modules, module, target)
                if to is not None and to != module:
                    edges[module].add(to)
        for child in modules:
            if len(child) == len(module) + 1 and child[: len(module)] == module:
                if re.search(r"(?<![:\w])" + re.escape(child[-1]) + r"::", code):
                    edges[module].add(child)
    return edges


def between_files(modules, edges):
    """The imports between files: module roots are tables of contents, not counted."""
    return {
        m: {t for t in ts if not is_root(modules[t])}
        for m, ts in edges.items()
        if not is_root(modules[m])
    }


def circles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in edges:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def stack_names_outside(files, allowed):
    """Each (file, line number, name) where a stack is named outside its folder: `files` maps a
    path under `checks/src` to its text; `allowed` the paths excused."""
    names = re.compile("|".join(STACKS), re.IGNORECASE)
    out = []
    for path, text in sorted(files.items()):
        if path in STACK_REGISTRY or path in allowed:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for found in names.finditer(BY_RIGHT.sub("", line)):
                name = found.group(0).lower()
                if not path.startswith(STACKS[name]):
                    out.append((path, n, name))
    return out


def rust_files(root):
    """Each Rust file under `root`, by its path under it, with its text."""
    out = {}
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    out[os.path.relpath(path, root).replace(os.sep, "/")] = f.read()
    return out


def self_test():
    """The stack-name rule on files made for it: it fails where it must, and only there."""
    files = {
        "dialect/pipecat/mod.rs": "//! Pipecat's frames.\n",
        "dialect/mod.rs": "pub mod pipecat;\npub mod livekit;\n",
        "gate/mod.rs": "let p = Profile::Pipecat;\n// as LiveKit does\n",
        "dialect/livekit/mod.rs": "// unlike Pipecat\n",
        "explore/turn.rs": "fn pipecat_kinds() {}\n",
        "dialect/lab/reader/turn.rs": 'Some("realtime_audio") => Mode::Audio,\n',
    }
    got = stack_names_outside(files, {"explore/turn.rs": "why"})
    want = [("dialect/livekit/mod.rs", 1, "pipecat"), ("gate/mod.rs", 2, "livekit")]
    if got != want:
        print(f"layout: self-test: the stack-name rule found {got}, not {want}")
        return 1
    print("layout: self-test ok (the stack-name rule fails on a stack named out of its folder)")
    return 0


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    bad = 0
    for path, n, name in stack_names_outside(rust_files(STACK_ROOT), STACK_NAMES_ALLOWED):
        print(f"layout: {STACK_ROOT}/{path}:{n} names {name}: a stack is named in its folder "
              f"({STACK_ROOT}/{STACKS[name]}) and the registry only")
        bad += 1
    named = set(rust_files(STACK_ROOT))
    for path in sorted(p for p in STACK_NAMES_ALLOWED if p not in named):
        print(f"layout: STACK_NAMES_ALLOWED lists {path}, which is not a file of {STACK_ROOT}")
        bad += 1
    for top in SIZED:
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "target")
            for name in sorted(names):
                if name.endswith(".rs"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as f:
                        n = sum(1 for _ in f)
                    if n > MAX_LINES:
                        print(f"layout: {path} has {n} lines, more than {MAX_LINES}")
                        bad += 1
    for root, low, high in NO_IMPORT:
        modules = module_files(root)
        for module, targets in sorted(imports(modules).items()):
            # A test module in its own file (`tests.rs`) may: tests are not the floor's code.
            if module[:1] != (low,) or module[-1] == "tests":
                continue
            for to in sorted(t for t in targets if t[:1] == (high,)):
                print(f"layout: {root}: {os.path.relpath(modules[module], root)} imports "
                      f"{os.path.relpath(modules[to], root)}: {low}/ imports nothing from {high}/")
                bad += 1
    for root in CRATE_ROOTS:
        modules = module_files(root)
        edges = between_files(modules, imports(modules))
        for comp in circles(edges):
            files = " ".join(os.path.relpath(modules[m], root) for m in comp)
            print(f"layout: {root}: an import circle: {files}")
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        print(f"    {os.path.relpath(modules[a], root)} imports {os.path.relpath(modules[b], root)}")
            bad += 1
    if bad:
        return 1
    print(f"layout: ok (every file {MAX_LINES} lines or fewer; no import circle; "
          "trace/ imports nothing from dialect/; no stack named outside its folder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
