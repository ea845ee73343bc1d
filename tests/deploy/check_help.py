#!/usr/bin/python3
"""`hourglass --help` and each command's help against docs/reference.md: every option a help
lists is documented there, every option the page names exists in some help, and every command
of `hourglass --help` is in its command table.

Usage: tests/deploy/check_help.py HOURGLASS_BINARY SOURCE_DIR   (exit 0 when consistent)
"""
import re, subprocess, sys

binary, root = sys.argv[1], sys.argv[2]
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")


def help_of(*command):
    r = subprocess.run([binary, *command, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(['hourglass', *command, '--help'])} exited {r.returncode}: {r.stderr}")
    return r.stdout


top = help_of()
commands = re.findall(r"^  ([a-z]+)\s{2,}\S", top.split("Subcommands:")[1], re.M)
reference = open(f"{root}/docs/reference.md").read()
documented = set(OPTION.findall(reference))
failures = []
in_helps = set()
for command in commands:
    options = set(OPTION.findall(help_of(command))) - {"--help"}
    in_helps |= options
    undocumented = sorted(options - documented)
    if undocumented:
        failures.append(f"hourglass {command} --help lists {', '.join(undocumented)}, not in docs/reference.md")
    if f"`hourglass {command}" not in reference:
        failures.append(f"command {command} is not in docs/reference.md's command table")
    print(f"{command}: {len(options)} options, all documented" if not undocumented else f"{command}: undocumented {undocumented}")
unknown = sorted(documented - in_helps - {"--help"})
if unknown:
    failures.append(f"docs/reference.md names {', '.join(unknown)}, which no command accepts")
if len(commands) < 6:
    failures.append(f"found only {len(commands)} commands in hourglass --help: {commands}")
for failure in failures:
    print("FAIL  " + failure)
print("help and docs/reference.md agree" if not failures else f"{len(failures)} failed")
sys.exit(1 if failures else 0)
