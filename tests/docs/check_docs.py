#!/usr/bin/env python3
"""Checks the repository's cross-references, which no compiler checks:

- every Markdown link to a file of the repository names a file that exists, and every
  `#anchor` names a heading of its target (GitHub's anchors);
- every citation of the contract, `reference §N` or `reference §N.M` in code, scripts and SQL
  and `§N` inside docs/reference.md, names a section of docs/reference.md (`## N.`, `### N.M`,
  or item M of the numbered list of section N);
- nothing cites a design document that is not in the repository (`SPEC`, then a section sign).

Usage: check_docs.py SOURCE_DIR. Prints every broken reference; exits 1 if there is one.
"""
import os
import re
import subprocess
import sys
import unicodedata

TEXT_SUFFIXES = {".md", ".cpp", ".hpp", ".h", ".c", ".py", ".sh", ".sql", ".cmake", ".txt",
                 ".toml", ".yml", ".yaml", ".js", ".html", ".css", ".env", ".service", ""}


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
        return files


def github_slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.strip().lower()
    kept = []
    for ch in text:
        if ch in " -_" or unicodedata.category(ch)[0] in "LN":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def headings(markdown):
    """GitHub's anchors of a Markdown text: slugs, with -1, -2... for repeated ones."""
    anchors, seen, fenced = set(), {}, False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def reference_sections(markdown):
    """The citable sections of docs/reference.md: "N", "N.M" headings and list items."""
    sections, current, fenced = set(), None, False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        top = re.match(r"##\s+(\d+)\.\s", line)
        sub = re.match(r"###\s+(\d+)\.(\d+)\s", line)
        if top:
            current = top.group(1)
            sections.add(current)
        elif sub:
            sections.add(f"{sub.group(1)}.{sub.group(2)}")
        else:
            item = re.match(r"(\d+)\.\s", line)
            if current and item:
                sections.add(current + "." + item.group(1))
    return sections


def main():
    root = sys.argv[1]
    files = [f for f in tracked_files(root)
             if os.path.splitext(f)[1] in TEXT_SUFFIXES and os.path.isfile(os.path.join(root, f))]
    texts = {}
    for f in files:
        try:
            with open(os.path.join(root, f), encoding="utf-8") as handle:
                texts[f] = handle.read()
        except UnicodeDecodeError:
            continue
    problems = []
    anchors_of = {}

    def anchors(path):
        if path not in anchors_of:
            anchors_of[path] = headings(texts.get(path, ""))
        return anchors_of[path]

    for f, text in texts.items():
        if not f.endswith(".md"):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                if not os.path.exists(os.path.join(root, resolved)):
                    problems.append(f"{f}:{lineno}: link to a missing file: {target}")
                elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                    problems.append(f"{f}:{lineno}: no heading for #{anchor} in {resolved}")

    sections = reference_sections(texts.get("docs/reference.md", ""))
    if not sections:
        problems.append("docs/reference.md: no numbered sections found")
    for f, text in texts.items():
        for lineno, line in enumerate(text.splitlines(), 1):
            if re.search(r"\bSPEC\s*§", line):
                problems.append(f"{f}:{lineno}: cites a document not in the repository "
                                "(cite docs/reference.md as `reference §N`)")
            cited = re.findall(r"reference(?:\.md)?\)?\s+§(\d+(?:\.\d+)?)((?:,\s*§\d+(?:\.\d+)?)*)", line)
            if f == "docs/reference.md":
                cited += [(m, "") for m in re.findall(r"(?<![\w.])§(\d+(?:\.\d+)?)", line)]
            for first, more in cited:
                for section in [first] + re.findall(r"§(\d+(?:\.\d+)?)", more):
                    if section not in sections:
                        problems.append(f"{f}:{lineno}: docs/reference.md has no §{section}")
    for problem in sorted(set(problems)):
        print(problem)
    print(f"check_docs: {len(texts)} files, {len(sections)} reference sections, "
          f"{len(set(problems))} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
