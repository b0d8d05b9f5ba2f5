#!/usr/bin/env bash
# Checks that docs/MODULES.md describes the package that Package.swift declares.
#
# The page holds a table between the markers <!-- modules:begin --> and <!-- modules:end -->:
#
#   | target | kind | depends on (this package) | external products | concern |
#
# This script reads the manifest with `swift package dump-package` and compares it with that table:
#   - the page lists exactly the package's targets (tests and executables included), each once;
#   - each target's kind matches: library, internal (a target that no product vends), executable product,
#     executable (no product), test, system library (or plugin, macro, binary);
#   - for each target, "depends on (this package)" lists exactly the package's own targets it depends on;
#   - for each target, "external products" lists exactly the products of other packages it depends on, a
#     conditional one followed by its condition, as in `NIOEmbedded (trait Fuzzing)`;
#   - each target has a concern (a line of prose that is not TODO).
# The concern column is prose: the script checks only that it is written. Cells are separated by `|`, so no cell
# may hold one; a cell that lists nothing holds an em dash (—).
#
# Usage:
#   scripts/check-modules.sh [PAGE]           check PAGE (default docs/MODULES.md); exit 0 when it agrees with
#                                             Package.swift, 1 when it does not (each difference printed), 2 when
#                                             the check cannot run
#   scripts/check-modules.sh --print [PAGE]   print the table PAGE should hold, markers included: the columns the
#                                             manifest decides from the manifest, the concerns from PAGE (TODO for a
#                                             target PAGE does not list yet)
#   scripts/check-modules.sh --write [PAGE]   replace PAGE's table with that one (then replace each TODO by a concern)
#
# After a change to Package.swift: run with --write, write a concern for each new target, and run it again.
#
# The manifest is read with a scratch directory of its own (in a temporary directory), so the check neither waits
# for nor disturbs a build that holds .build. Set SWIFT to use another swift executable.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=check
page=
for argument in "$@"; do
    case "$argument" in
        --print) mode=print ;;
        --write) mode=write ;;
        -h | --help)
            sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        -*)
            echo "check-modules: unknown option $argument (try --help)" >&2
            exit 2
            ;;
        *)
            if [[ -n "$page" ]]; then
                echo "check-modules: one page at most (got $page and $argument)" >&2
                exit 2
            fi
            page=$argument
            ;;
    esac
done
shown=${page:-docs/MODULES.md}
page=${page:-$root/docs/MODULES.md}
if [[ ! -f "$page" ]]; then
    echo "check-modules: no page at $page" >&2
    exit 2
fi
command -v python3 >/dev/null || {
    echo "check-modules: python3 is needed" >&2
    exit 2
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "${SWIFT:-swift}" package --package-path "$root" --scratch-path "$work/scratch" dump-package >"$work/manifest.json" 2>"$work/dump.err"; then
    echo "check-modules: swift package dump-package failed:" >&2
    cat "$work/dump.err" >&2
    exit 2
fi

python3 - "$mode" "$page" "$work/manifest.json" "$shown" <<'PYTHON'
import json
import re
import sys

mode, page_path, manifest_path, shown = sys.argv[1:5]
BEGIN, END = "<!-- modules:begin -->", "<!-- modules:end -->"
HEADER = "| target | kind | depends on (this package) | external products | concern |"
NONE = "—"
TODO = "TODO: one line on what this target is for"

with open(manifest_path) as file:
    manifest = json.load(file)

names = [target["name"] for target in manifest["targets"]]
own = set(names)

# Which product vends each target.
vended = {}
for product in manifest["products"]:
    kind = "library" if "library" in product["type"] else "executable" if "executable" in product["type"] else "other"
    for target in product["targets"]:
        vended.setdefault(target, []).append((kind, product["name"]))


def kind_of(target):
    name, type_ = target["name"], target["type"]
    products = vended.get(name, [])
    if type_ == "regular":
        libraries = [product for kind, product in products if kind == "library"]
        if not libraries:
            return "internal"
        if libraries == [name]:
            return "library"
        return "library (product " + ", ".join(sorted(libraries)) + ")"
    if type_ == "executable":
        return "executable product" if any(kind == "executable" for kind, _ in products) else "executable"
    return {"test": "test", "system": "system library"}.get(type_, type_)


def condition_text(condition):
    if not condition:
        return ""
    parts = []
    if condition.get("traits"):
        parts.append("trait " + ", ".join(condition["traits"]))
    if condition.get("platformNames"):
        parts.append("on " + ", ".join(condition["platformNames"]))
    if condition.get("config"):
        parts.append("in " + str(condition["config"].get("config", condition["config"])))
    return f" ({'; '.join(parts)})" if parts else ""


def dependencies(target):
    """The target's own-package dependencies and its external products, each a set of strings."""
    ours, external = set(), set()
    for dependency in target["dependencies"]:
        (form, value), = dependency.items()
        if form == "target":
            ours.add(value[0])
        elif form == "byName":
            (ours if value[0] in own else external).add(value[0] + ("" if value[0] in own else condition_text(value[1])))
        elif form == "product":
            external.add(value[0] + condition_text(value[3] if len(value) > 3 else None))
        else:
            external.add(f"{form}: {value}")
    return ours, external


expected = {}
for target in manifest["targets"]:
    ours, external = dependencies(target)
    expected[target["name"]] = (kind_of(target), ours, external)

with open(page_path) as file:
    text = file.read()
if text.count(BEGIN) == 1 and text.count(END) == 1 and text.index(BEGIN) < text.index(END):
    before, rest = text.split(BEGIN)
    block, after = rest.split(END)
elif mode == "print":
    before, block, after = text, "", ""  # Nothing to keep: every concern is TODO.
else:
    print(f"{shown}: needs one {BEGIN} … {END} block holding the table", file=sys.stderr)
    sys.exit(1)


def cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def items(cell):
    if cell in ("", NONE, "-"):
        return set()
    return {item.strip().strip("`").strip() for item in cell.split(",") if item.strip()}


rows, problems = {}, []
for number, line in enumerate(block.splitlines(), start=before.count("\n") + 1):
    if not line.strip().startswith("|"):
        continue
    row = cells(line)
    if row[0] == "target" or all(re.fullmatch(r":?-+:?", cell) for cell in row):
        continue
    if len(row) != 5:
        problems.append(f"line {number}: a row needs 5 cells (target | kind | depends on | external | concern), not {len(row)}")
        continue
    name = row[0].strip("`")
    if name in rows:
        problems.append(f"target {name}: listed twice (line {number})")
        continue
    rows[name] = (row[1], items(row[2]), items(row[3]), row[4])

if mode in ("print", "write"):
    lines = [BEGIN, HEADER, "|---|---|---|---|---|"]
    for name in names:
        kind, ours, external = expected[name]
        concern = rows[name][3] if name in rows and rows[name][3] else TODO
        listed = lambda values: ", ".join(f"`{value}`" for value in sorted(values)) or NONE
        lines.append(f"| `{name}` | {kind} | {listed(ours)} | {listed(external)} | {concern} |")
    lines.append(END)
    table = "\n".join(lines)
    if mode == "print":
        print(table)
    else:
        with open(page_path, "w") as file:
            file.write(before + table + after)
        todo = [name for name in names if not (name in rows and rows[name][3])]
        print(f"{shown}: table rewritten from Package.swift ({len(names)} targets)")
        if todo:
            print("write a concern for: " + ", ".join(todo))
    sys.exit(0)

for name in names:
    if name not in rows:
        problems.append(f"target {name}: in Package.swift, not in the page")
for name in rows:
    if name not in expected:
        problems.append(f"target {name}: in the page, not in Package.swift")
edges = 0
for name in names:
    if name not in rows:
        continue
    kind, ours, external = expected[name]
    page_kind, page_ours, page_external, concern = rows[name]
    edges += len(ours)
    if page_kind != kind:
        problems.append(f"target {name}: kind is '{kind}' in Package.swift, '{page_kind}' in the page")
    for dependency in sorted(ours - page_ours):
        problems.append(f"edge {name} -> {dependency}: in Package.swift, not in the page")
    for dependency in sorted(page_ours - ours):
        problems.append(f"edge {name} -> {dependency}: in the page, not in Package.swift")
    for product in sorted(external - page_external):
        problems.append(f"target {name}: external product {product}: in Package.swift, not in the page")
    for product in sorted(page_external - external):
        problems.append(f"target {name}: external product {product}: in the page, not in Package.swift")
    if not concern or concern.startswith("TODO"):
        problems.append(f"target {name}: no concern written")

if problems:
    for problem in problems:
        print(problem)
    print(
        f"{shown} differs from Package.swift in {len(problems)} place(s); "
        "scripts/check-modules.sh --print shows the table it should hold (--write puts it in)."
    )
    sys.exit(1)
print(f"{shown} agrees with Package.swift: {len(names)} targets, {edges} dependencies between them.")
PYTHON
