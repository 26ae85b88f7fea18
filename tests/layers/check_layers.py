#!/usr/bin/env python3
"""Checks the include layering of the source tree (docs/architecture.md, "Areas").

The runtime is split into areas, each a folder under runtime/src and runtime/include/weft, in
this order from the bottom up. A file may include its own area and the areas below it, never one
above: that is what keeps each area buildable and understandable without those above it.

Around the runtime: tasks build on the runtime's public headers only; apps build on tasks and the
runtime's public headers; neither reaches into runtime/src. Public headers never include
internal ones (an installed header could not find them).

    check_layers.py [ROOT]            exit 1 and one line per wrong include
    check_layers.py [ROOT] --mermaid  the area graph with the number of includes on each arrow
"""
import collections
import os
import re
import sys

AREAS = ["util", "device", "data", "trace", "graph", "cluster", "mapping", "transport", "migration", "exec"]
# weft.hpp and cuda.hpp gather the public headers for users; the runtime itself never includes them.
UMBRELLA = "api"
RANK = {a: i for i, a in enumerate(AREAS + [UMBRELLA])}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCES = (".hpp", ".cpp", ".cu", ".cuh", ".h")


def runtime_area(rel):
    """Area of a file given by its path under runtime/src or runtime/include/weft, else None."""
    parts = rel.split("/")
    if len(parts) == 1:
        return UMBRELLA if parts[0] in ("weft.hpp", "cuda.hpp") else None
    return parts[0] if parts[0] in AREAS else None


def classify(root, path):
    """(kind, area): kind is runtime-src, runtime-public, tasks, apps or other."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    if rel.startswith("runtime/src/"):
        return "runtime-src", runtime_area(rel[len("runtime/src/"):])
    if rel.startswith("runtime/include/weft/"):
        return "runtime-public", runtime_area(rel[len("runtime/include/weft/"):])
    top = rel.split("/")[0]
    return (top if top in ("tasks", "apps") else "other"), None


def resolve(root, including, name):
    """The file an include names: relative to the including file, then the runtime's roots."""
    candidates = [os.path.join(os.path.dirname(including), name),
                  os.path.join(root, "runtime", "src", name),
                  os.path.join(root, "runtime", "include", name)]
    if name.startswith("weft/tasks/"):
        candidates.append(os.path.join(root, "tasks", name.split("/")[2], "include", name))
    for c in candidates:
        if os.path.isfile(c):
            return os.path.normpath(c)
    return None


def walk(root):
    for top in ("runtime", "tasks", "apps"):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCES):
                    yield os.path.join(folder, f)


def check(root):
    errors, arrows = [], collections.Counter()
    for path in walk(root):
        kind, area = classify(root, path)
        with open(path, encoding="utf-8", errors="replace") as text:
            lines = text.readlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(root, path, m.group(1))
            if target is None:
                continue  # a library's header or a generated one
            to_kind, to_area = classify(root, target)
            where = f"{os.path.relpath(path, root)}:{number}: includes \"{m.group(1)}\""
            if kind in ("runtime-src", "runtime-public") and to_kind in ("runtime-src", "runtime-public"):
                if area is None or to_area is None:
                    errors.append(f"{where}: a file outside the runtime's areas ({', '.join(AREAS)})")
                    continue
                if area != to_area:
                    arrows[(area, to_area)] += 1
                if RANK[to_area] > RANK[area]:
                    errors.append(f"{where}: area '{to_area}' is above '{area}'")
                if kind == "runtime-public" and to_kind == "runtime-src":
                    errors.append(f"{where}: a public header includes an internal one")
            elif kind in ("runtime-src", "runtime-public") and to_kind in ("tasks", "apps"):
                errors.append(f"{where}: the runtime includes {to_kind}")
            elif kind in ("tasks", "apps") and to_kind == "runtime-src":
                errors.append(f"{where}: {kind} reach into the runtime's internal headers")
            elif kind == "tasks" and to_kind == "apps":
                errors.append(f"{where}: tasks include apps")
    return errors, arrows


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), "..", ".."))
    errors, arrows = check(root)
    if "--mermaid" in argv:
        print("graph BT")
        for (a, b), n in sorted(arrows.items(), key=lambda kv: (RANK[kv[0][0]], RANK[kv[0][1]])):
            print(f"  {a} -->|{n}| {b}")
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} wrong include(s); the order from the bottom: {' < '.join(AREAS)}")
        return 1
    print(f"check_layers: {sum(arrows.values())} includes between {len(AREAS)} areas, none pointing up")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
