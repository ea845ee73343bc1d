#!/usr/bin/python3
"""Checks compose/ without a container engine (none on CI machines):

1. `docker-compose config` (Debian's docker-compose) accepts the file with compose/env.example,
   and refuses it without passwords (secrets must come from compose/.env, never defaults);
2. least privilege: hourglass connects as its own user and role, never as an administrator;
   every port is published on loopback; every long-running service has a health check and a
   restart policy; hourglass runs read-only, without capabilities or new privileges;
3. the Dockerfile: two stages, the runtime stage runs as a non-root user, every Debian package
   it names exists, every COPY source exists and passes .dockerignore;
4. the build stage's configure step, run on a copy of exactly what the Dockerfile copies (so a
   file the build needs but the image lacks is found here);
5. monitoring/: the Prometheus configuration and alert rules pass `promtool check`, the alert
   rules' unit tests pass `promtool test rules`, and every hourglass metric the rules and the
   Grafana dashboard use is one hourglass exports.

Usage: tests/deploy/check_compose.py [SOURCE_DIR]   (exit 0 when every check passes)
"""
import fnmatch, os, re, shutil, subprocess, sys, tempfile

import yaml

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
COMPOSE = os.path.join(ROOT, "compose", "docker-compose.yml")
DOCKERFILE = os.path.join(ROOT, "compose", "Dockerfile")
failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        failures.append(what)


def compose_config(*extra):
    return subprocess.run(["docker-compose", *extra, "-f", COMPOSE, "config"], capture_output=True, text=True,
                          cwd=ROOT, env={k: v for k, v in os.environ.items() if not k.endswith("PASSWORD")})


# 1. docker-compose config
good = compose_config("--env-file", os.path.join(ROOT, "compose", "env.example"))
check(good.returncode == 0, "docker-compose config accepts the file with compose/env.example" +
      ("" if good.returncode == 0 else ": " + good.stderr.strip()[-400:]))
with tempfile.NamedTemporaryFile("w", suffix=".env") as empty:
    bad = compose_config("--env-file", empty.name)
check(bad.returncode != 0 and "compose/.env" in bad.stderr, "without passwords, docker-compose config refuses and says where to set them")
if good.returncode != 0:
    sys.exit(1)
config = yaml.safe_load(good.stdout)
services = config["services"]

# 2. least privilege and operability
hg = services["hourglass"]
env = hg.get("environment", {})
check(re.match(r"^amqp://hourglass:", env.get("HOURGLASS_AMQP_URL", "")) is not None, "hourglass connects to RabbitMQ as the user hourglass")
check(re.match(r"^postgresql://hourglass:", env.get("HOURGLASS_PG_URL", "")) is not None, "hourglass connects to PostgreSQL as the role hourglass")
admin_passwords = {services["rabbitmq"]["environment"]["RABBITMQ_DEFAULT_PASS"], services["postgres"]["environment"]["POSTGRES_PASSWORD"]}
check(not any(p in str(v) for p in admin_passwords for v in env.values()), "no administrator password reaches hourglass")
setup = open(os.path.join(ROOT, "compose", "setup", "rabbitmq-user.sh")).read()
check(re.search(r'tags\\?": \\?"\\?"', setup) is not None, "the RabbitMQ user hourglass gets no tags (not an administrator)")
role = open(os.path.join(ROOT, "compose", "setup", "postgres-role.sh")).read()
check("NOSUPERUSER NOCREATEDB NOCREATEROLE" in role, "the PostgreSQL role hourglass is no superuser and cannot create databases or roles")
for name, service in services.items():
    for port in service.get("ports", []):
        text = port if isinstance(port, str) else f"{port.get('host_ip', '')}:{port.get('published')}"
        check(str(text).startswith("127.0.0.1:"), f"{name}: port {text} published on loopback only")
    if name.endswith("-setup"):
        check(service.get("restart") in ("no", None), f"{name}: a one-shot setup, not restarted")
        continue
    check("healthcheck" in service, f"{name}: has a health check")
    check(service.get("restart") in ("unless-stopped", "always", "on-failure"), f"{name}: has a restart policy")
check(hg.get("read_only") is True, "hourglass: read-only root filesystem")
check("ALL" in hg.get("cap_drop", []), "hourglass: every capability dropped")
check("no-new-privileges:true" in hg.get("security_opt", []), "hourglass: no new privileges")
check(hg.get("depends_on", {}).get("rabbitmq-setup", {}).get("condition") == "service_completed_successfully",
      "hourglass starts after its RabbitMQ user exists")

# 3. the Dockerfile
text = open(DOCKERFILE).read()
stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M | re.I)
check(len(stages) >= 2, f"multi-stage Dockerfile ({len(stages)} stages)")
runtime = text[text.rfind("\nFROM"):]
users = re.findall(r"^USER\s+(\S+)", runtime, re.M)
check(bool(users) and users[-1] not in ("root", "0"), f"the runtime stage runs as a non-root user ({users[-1] if users else 'none'})")
packages = set()
for block in re.findall(r"apt-get install[^\n]*?((?:[^\n]*\\\n)*[^\n]*)", text):
    for word in block.replace("\\\n", " ").split():
        if word in ("&&", "rm") or word.startswith("-"):
            if word in ("&&", "rm"):
                break
            continue
        packages.add(word)
missing = [p for p in sorted(packages)
           if subprocess.run(["apt-cache", "show", p], capture_output=True).returncode != 0]
check(packages and not missing, f"every Debian package of the Dockerfile exists ({len(packages)} checked)" +
      (f"; missing: {missing}" if missing else ""))
patterns = [l.strip() for l in open(os.path.join(ROOT, ".dockerignore")) if l.strip() and not l.startswith("#")]


def ignored(path):
    result = False
    for p in patterns:
        negate = p.startswith("!")
        p = p[1:] if negate else p
        if fnmatch.fnmatch(path, p.rstrip("/")) or fnmatch.fnmatch(path.split("/")[0], p.rstrip("/")):
            result = not negate
    return result


copies = [c for c in re.findall(r"^COPY\s+(?!--from)(\S+)\s+\S+", text, re.M)]
for source in copies:
    check(os.path.exists(os.path.join(ROOT, source)) and not ignored(source), f"COPY {source}: exists and is in the build context")

# 4. the build stage's configure step on exactly what the image gets
configure = re.search(r"RUN (cmake -S[^\n]*(?:\\\n[^\n]*)*?)\s*\\\n\s*&& cmake --build", text)
check(configure is not None, "the build stage configures with cmake")
if configure:
    with tempfile.TemporaryDirectory() as tmp:
        for source in copies:
            src = os.path.join(ROOT, source)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(tmp, source))
        command = configure.group(1).replace("\\\n", " ").replace("/build", os.path.join(tmp, "build"))
        r = subprocess.run(command, shell=True, cwd=tmp, capture_output=True, text=True)
        check(r.returncode == 0, "the build stage's cmake configure succeeds on the copied sources" +
              ("" if r.returncode == 0 else ":\n" + (r.stdout + r.stderr)[-1500:]))

# 5. monitoring
MONITORING = os.path.join(ROOT, "monitoring")
for name in ("prometheus", "grafana"):
    check(name in services, f"compose runs {name}")
promtool = shutil.which("promtool")
check(promtool is not None, "promtool is installed (Debian package prometheus)")
if promtool:
    for args, what in ((["check", "config", "prometheus.yml"], "promtool check config"),
                       (["check", "rules", "alerts.yml"], "promtool check rules"),
                       (["test", "rules", "alerts_test.yml"], "promtool test rules (every alert fires when it should)")):
        r = subprocess.run([promtool, *args], cwd=os.path.join(MONITORING, "prometheus"), capture_output=True, text=True)
        check(r.returncode == 0, what + ("" if r.returncode == 0 else ":\n" + (r.stdout + r.stderr)[-1500:]))
exported = set()
for folder, _, files in os.walk(os.path.join(ROOT, "src")):
    for f in files:
        exported |= set(re.findall(r'"(hourglass_[a-z_]+)"', open(os.path.join(folder, f)).read()))
import json
dashboard = json.load(open(os.path.join(MONITORING, "grafana", "dashboards", "hourglass.json")))
expressions = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
expressions += re.findall(r"expr: (.*)", open(os.path.join(MONITORING, "prometheus", "alerts.yml")).read())
used = {re.sub(r"_(bucket|sum|count)$", "", m) for e in expressions for m in re.findall(r"hourglass_[a-z_]+", e)}
unknown = sorted(used - exported)
check(used and not unknown, f"the dashboard and the alerts use {len(used)} hourglass metrics, all exported" +
      (f"; unknown: {unknown}" if unknown else ""))

print(f"\n{len(failures)} failed" if failures else "\nall checks passed")
sys.exit(1 if failures else 0)
