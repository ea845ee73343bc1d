#!/usr/bin/env python3
"""The shape the code keeps (docs/architecture.md "Code layout"), checked on every test run:

- PostgreSQL's library stays inside src/store: no `#include <pqxx...>` elsewhere in src/, and
  no header of src/store that includes it is included from outside src/store;
- every statement the store runs has its file in src/store/sql/, and every file there is run;
- no source file over 600 lines and no function over 80, except the ones listed in DEBTS below
  (each a known debt, to be split; the list may only shrink: a listed file that now fits fails
  the check too, so that the list says what is true).
"""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
# Known debts: path -> what is over (file length, or a function's name).
DEBTS = {}


def sources(root, *folders):
    for folder in folders:
        for base, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp")):
                    path = os.path.join(base, name)
                    yield os.path.relpath(path, root), open(path, encoding="utf-8").read()


def functions(text):
    """(name, lines) of each function defined at the top level of a .cpp file: a signature
    starting at column 0 (on one line or several), from it to the brace that closes the body."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        start = re.match(r"^[A-Za-z_][\w:<>,*& ]*?([\w:~]+)\s*\(", line)
        if not start or re.match(r"^(namespace|struct|class|enum|union|extern|using|typedef)\b", line):
            i += 1
            continue
        k = i  # the signature's last line: the first to open a brace, unless a ';' ends it first
        while k < len(lines) and not lines[k].rstrip().endswith("{") and ";" not in lines[k]:
            k += 1
        if k == len(lines) or not lines[k].rstrip().endswith("{"):
            i = k + 1
            continue
        depth, j = 0, k
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth == 0:
                break
            j += 1
        yield start.group(1), j - i + 1
        i = j + 1


def main(root):
    problems = []
    store_pqxx_headers = set()
    for path, text in sources(root, "src", "include"):
        if path.startswith("src/store/"):
            if path.endswith(".hpp") and re.search(r"#include <pqxx", text):
                store_pqxx_headers.add(path[len("src/"):])
        elif re.search(r"#include <pqxx", text):
            problems.append(f"{path}: includes pqxx outside src/store")
    for path, text in sources(root, "src", "include"):
        if path.startswith("src/store/"):
            continue
        for header in store_pqxx_headers:
            if f'#include "{header}"' in text:
                problems.append(f"{path}: includes {header}, which includes pqxx")

    # Statements: exec_prepared("name" / exec_prepared1("name" against src/store/sql/name.sql.
    sql_dir = os.path.join(root, "src", "store", "sql")
    files = {name[:-4] for name in os.listdir(sql_dir) if name.endswith(".sql")}
    used = set()
    for path, text in sources(root, "src"):
        used |= set(re.findall(r'exec_prepared1?\(\s*"(\w+)"', text))
    for name in sorted(used - files):
        problems.append(f"statement {name} is run but has no src/store/sql/{name}.sql")
    for name in sorted(files - used):
        problems.append(f"src/store/sql/{name}.sql is never run")

    # Sizes.
    for path, text in sources(root, "src", "include"):
        debts = DEBTS.get(path, set())
        over = set()
        count = text.count("\n")
        if count > MAX_FILE_LINES:
            over.add("file")
            if "file" not in debts:
                problems.append(f"{path}: {count} lines (at most {MAX_FILE_LINES})")
        if path.endswith(".cpp"):
            for name, length in functions(text):
                if length > MAX_FUNCTION_LINES:
                    over.add(name)
                    if name not in debts:
                        problems.append(f"{path}: {name} is {length} lines (at most {MAX_FUNCTION_LINES})")
        for debt in sorted(debts - over):
            problems.append(f"{path}: {debt} is listed as a debt but fits now: remove it from DEBTS")
    for path in sorted(set(DEBTS) - {p for p, _ in sources(root, "src", "include")}):
        problems.append(f"{path}: listed in DEBTS but gone")

    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
