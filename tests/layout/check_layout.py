#!/usr/bin/env python3
"""The shape the code keeps (docs/architecture.md "Code layout"), checked on every test run:

- PostgreSQL's library stays inside src/store: no `#include <pqxx...>` elsewhere in src/, and
  no header of src/store that includes it is included from outside src/store;
- every statement the store runs has its file in src/store/sql/, and every file there is run;
- no source file over 600 lines and no function over 80 (methods defined in a class, tests
  and benchmark drivers included: src/, include/, tests/, bench/, fuzz/), except the ones
  listed in DEBTS below (each a known debt, to be split; the list may only shrink: a listed
  one that now fits fails the check too, so that the list says what is true).
"""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
# Known debts: path -> what is over (file length, or a function's name).
DEBTS = {
}
MEASURED = ("src", "include", "tests", "bench", "fuzz")


def sources(root, *folders):
    for folder in folders:
        for base, dirs, files in os.walk(os.path.join(root, folder)):
            # Third-party code npm installs (bench/peers) is not ours to measure.
            dirs[:] = [d for d in dirs if d != "node_modules"]
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp")):
                    path = os.path.join(base, name)
                    yield os.path.relpath(path, root), open(path, encoding="utf-8").read()


# A line that opens a function's signature, at any indentation (methods defined in a class
# included): a name and its '(' (TEST_F(Suite, name) too), not a statement or a declaration.
SIGNATURE = re.compile(r"^\s*(?:[A-Za-z_~][\w:<>,*&\s]*?\s+)?([~\w:]+)\s*\(")
NOT_A_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|else|do|return|namespace|struct|class|"
                            r"enum|union|extern|using|typedef|try|case|throw|co_return)\b")
TEST_MACROS = ("TEST", "TEST_F", "TEST_P", "TYPED_TEST")


def functions(text):
    """(name, lines) of each function body in a C++ file, at any depth: from a signature (on
    at most eight lines, ended by the '{' that opens the body) to the brace that closes it.
    Lambdas bound to a name and control statements are not functions; a test's name is
    Suite.name."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        start = SIGNATURE.match(line)
        if (not start or NOT_A_FUNCTION.match(line) or "=" in line.split("(")[0]
                or line.lstrip().startswith(("//", "#", "*"))):
            i += 1
            continue
        name = start.group(1)
        if name in TEST_MACROS:
            test = re.match(r"\s*\w+\(\s*(\w+)\s*,\s*(\w+)", line)
            if test:
                name = f"{test.group(1)}.{test.group(2)}"
        k = i  # the signature's last line: the first to open a brace, unless a ';' ends it first
        while k < len(lines) and k - i < 8 and not lines[k].rstrip().endswith("{") and ";" not in lines[k]:
            k += 1
        if k == len(lines) or not lines[k].rstrip().endswith("{"):
            i += 1
            continue
        depth, j = 0, k
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0:
                break
            j += 1
        yield name, j - i + 1
        i = k + 1  # functions defined inside it (a local class's) are measured too


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
    for path, text in sources(root, *MEASURED):
        debts = DEBTS.get(path, set())
        over = set()
        count = text.count("\n")
        if count > MAX_FILE_LINES:
            over.add("file")
            if "file" not in debts:
                problems.append(f"{path}: {count} lines (at most {MAX_FILE_LINES})")
        for name, length in functions(text):
            if length > MAX_FUNCTION_LINES:
                over.add(name)
                if name not in debts:
                    problems.append(f"{path}: {name} is {length} lines (at most {MAX_FUNCTION_LINES})")
        for debt in sorted(debts - over):
            problems.append(f"{path}: {debt} is listed as a debt but fits now: remove it from DEBTS")
    for path in sorted(set(DEBTS) - {p for p, _ in sources(root, *MEASURED)}):
        problems.append(f"{path}: listed in DEBTS but gone")

    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
