#!/usr/bin/env bash
# Checks ticketd's alerting as code (issue #15): deploy/prometheus and
# deploy/grafana.
#
#   scripts/alerts-test.sh               # everything below, in about 20 s
#   scripts/alerts-test.sh --mutations   # also: every alert's tests fail when
#                                        # its expression never fires (~2 min)
#
#   1. promtool check rules on deploy/prometheus/ticketd-rules.yml, and
#      promtool check config on deploy/prometheus/prometheus.yml (in a copy
#      beside placeholder token and CA files, which the example config reads
#      from the .ticketd/ of scripts/cluster-up.sh).
#   2. promtool test rules on deploy/prometheus/tests/*.yml, and that those
#      tests cover every alert with a case where it fires and one where it
#      stays silent, name no alert that does not exist, and check the value
#      of every recording rule.
#   3. Every ticketd_ metric named in the rules (expressions, annotations and
#      comments) and in the dashboard is one the Go source defines, every
#      label they select or group by is one the Go source (or Prometheus's
#      target labels) gives, and every route="..." is an Echo route of
#      httpapi, and every runbook annotation names a Markdown file of the
#      repository and a heading of it (README.md#guarantees,
#      docs/operations.md#tls) that exist: renaming a metric, a label, a
#      route, a file or a section fails here.
#   4. The Grafana dashboard is well-formed JSON, every panel and query uses
#      the ${datasource} variable, and panel ids are unique.
#
# Installs promtool (Debian's prometheus package) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

mutations=0
case ${1:-} in
--mutations) mutations=1 ;;
"") ;;
*)
	echo "usage: scripts/alerts-test.sh [--mutations]" >&2
	exit 2
	;;
esac

prom=deploy/prometheus
rules=$prom/ticketd-rules.yml
dashboard=deploy/grafana/ticketd-dashboard.json
PY=${PYTHON:-python3} # the checks use the standard library only

log() { echo "alerts-test: $*" >&2; }
fail() {
	echo "alerts-test: FAIL: $*" >&2
	exit 1
}

# ---- promtool, installed only when missing
if ! command -v promtool >/dev/null 2>&1; then
	log "installing promtool (Debian's prometheus package)"
	sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || fail "promtool missing and not root (no sudo) to install it"
		sudo=(sudo)
	fi
	timeout 300 "${sudo[@]}" apt-get update -qq
	timeout 600 "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends prometheus >/dev/null
	command -v promtool >/dev/null 2>&1 || fail "promtool still missing after installing prometheus"
fi
log "$(promtool --version 2>&1 | head -1)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-alerts-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---- 1. syntax: the rules, and the example config with what it loads
log "promtool check rules"
timeout 60 promtool check rules "$rules" >"$tmp/check-rules.out" 2>&1 ||
	{ cat "$tmp/check-rules.out" >&2; fail "promtool check rules"; }
log "promtool check config"
mkdir -p "$tmp/repo/$prom" "$tmp/repo/.ticketd/tls"
cp "$prom/prometheus.yml" "$rules" "$tmp/repo/$prom/"
echo placeholder-token >"$tmp/repo/.ticketd/reserve.token"
: >"$tmp/repo/.ticketd/tls/ca.pem"
timeout 60 promtool check config "$tmp/repo/$prom/prometheus.yml" >"$tmp/check-config.out" 2>&1 ||
	{ cat "$tmp/check-config.out" >&2; fail "promtool check config"; }

# ---- 2. the unit tests
log "promtool test rules $prom/tests/*.yml"
timeout 120 promtool test rules "$prom"/tests/*.yml >"$tmp/test-rules.out" 2>&1 ||
	{ cat "$tmp/test-rules.out" >&2; fail "promtool test rules"; }

# ---- 2, 3 and 4: coverage, names against the Go source, the dashboard
"$PY" - "$rules" "$dashboard" "$prom"/tests/*.yml <<'PY'
import json, re, subprocess, sys

rules_path, dash_path, test_paths = sys.argv[1], sys.argv[2], sys.argv[3:]
errors = []

# -- what the Go source exports: metric families, their labels, histograms
go_files = [f for f in subprocess.run(["git", "ls-files", "*.go"], capture_output=True, text=True,
                                      check=True).stdout.split() if not f.endswith("_test.go")]
families, histograms = {}, set()  # name -> set of labels
literals = set()                  # every string literal of the Go source
def labels_of(s):
    return set(re.findall(r'"([^"]+)"', s or ""))
for f in go_files:
    src = open(f).read()
    literals.update(re.findall(r'"((?:[^"\\\n]|\\.)*)"', src))
    # prometheus.NewCounter(prometheus.CounterOpts{Name: "ticketd_..."}), and
    # the ...Vec constructors with their []string{...} of labels.
    for m in re.finditer(r'prometheus\.New(Counter|Gauge|Histogram|Summary)(Vec)?\(\s*prometheus\.\w+Opts\{'
                         r'[^{}]*?Name:\s*"(ticketd_\w+)"', src):
        kind, vec, name = m.groups()
        labels = set()
        if vec:
            rest = re.match(r'(?:[^{}]|\{[^{}]*\})*?\},\s*\[\]string\{([^}]*)\}', src[m.end():], re.S)
            if not rest:
                errors.append(f"{f}: cannot read the labels of {name}")
            else:
                labels = labels_of(rest.group(1))
        families[name] = labels
        if kind == "Histogram":
            histograms.add(name)
    # prometheus.NewDesc("ticketd_...", "help", []string{...} or nil, ...)
    for m in re.finditer(r'prometheus\.NewDesc\(\s*"(ticketd_\w+)"\s*,\s*"(?:[^"\\]|\\.)*"\s*,\s*'
                         r'(nil|\[\]string\{[^}]*\})', src, re.S):
        families[m.group(1)] = labels_of(m.group(2))
    # cluster/metrics.go: d := func(name, help string) *prometheus.Desc {
    #   return prometheus.NewDesc("ticketd_raft_"+name, help, nil, nil) }
    for m in re.finditer(r'prometheus\.NewDesc\(\s*"(ticketd_\w*)"\s*\+\s*name\s*,\s*help\s*,\s*nil', src):
        for d in re.findall(r'\bd\(\s*"(\w+)"\s*,', src):
            families[m.group(1) + d] = set()
if len(families) < 40:
    errors.append(f"found only {len(families)} ticketd metric families in the Go source: is the extraction broken?")
series = set(families)
for h in histograms:
    series.update({h + "_bucket", h + "_sum", h + "_count"})
def series_labels(name):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and base in histograms:
            return families[base] | ({"le"} if suffix == "_bucket" else set())
    return families.get(name, set())
target_labels = {"job", "instance", "node"}  # Prometheus's, and prometheus.yml's node
all_labels = set().union(*families.values()) | target_labels | {"le"}

# httpapi's routes: the top-level paths and the /v1 group's.
service = open("httpapi/service.go").read()
routes = set(re.findall(r'\be\.(?:GET|POST|PUT|DELETE|Any)\(\s*"(/[^"]*)"', service))
routes |= {"/v1" + p for p in re.findall(r'\bv1\.(?:GET|POST|PUT|DELETE)\(\s*"(/[^"]*)"', service)}
if not any("/leases/:worker" in r for r in routes):
    errors.append("found no lease route in httpapi/service.go: is the extraction broken?")

metric_token = re.compile(r'(?<![A-Za-z0-9_:$.])(ticketd_[a-z0-9_]*[a-z0-9])')
selector = re.compile(r'(?<![A-Za-z0-9_])([A-Za-z_:][A-Za-z0-9_:]*)?\{([^{}]*)\}')
matcher = re.compile(r'([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
grouping = re.compile(r'\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)')

def check_expr(where, expr):
    # Strip Go-template and Grafana legend braces before reading selectors.
    e = re.sub(r'\{\{.*?\}\}', '', expr)
    for m in selector.finditer(e):
        name, body = m.group(1) or "", m.group(2)
        if "__" in body:
            continue
        if name.startswith("ticketd_"):
            allowed = series_labels(name) | target_labels
        else:
            allowed = all_labels if (":" in name or name == "") else None  # up, ALERTS, process_*: not ticketd's
        for lab, op, val in matcher.findall(body):
            if allowed is not None and lab not in allowed:
                errors.append(f"{where}: label {lab!r} on {name or 'a selector'}: not a label of it in the Go source")
            if lab == "route" and val not in routes:
                errors.append(f"{where}: route {val!r} is not a route of httpapi/service.go")
            if lab in {"outcome", "op", "kind", "listener", "result", "method"} and op in ("=", "=~"):
                for alt in val.split("|"):
                    if re.fullmatch(r'[A-Za-z_]+', alt) and alt not in literals:
                        errors.append(f"{where}: {lab}={alt!r} is not a string the Go source uses")
    for m in grouping.finditer(e):
        for lab in [l.strip() for l in m.group(1).split(",") if l.strip()]:
            if lab not in all_labels:
                errors.append(f"{where}: groups by {lab!r}, not a label the Go source exports")

def check_names(where, text):
    for name in set(metric_token.findall(text)):
        if name not in series:
            errors.append(f"{where}: {name} is not a metric the Go source exports")

# -- the rules
text = open(rules_path).read()
check_names(rules_path, text)
lines = text.split("\n")
exprs, alerts, records = [], [], []
for i, line in enumerate(lines):
    m = re.match(r'\s*- (alert|record):\s*(\S+)', line)
    if m:
        (alerts if m.group(1) == "alert" else records).append(m.group(2))
    m = re.match(r'(\s*)expr:\s*(.*)$', line)
    if m:
        indent, value = len(m.group(1)), m.group(2)
        if value in ("|", ">", "|-", ">-"):
            body = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                body.append(nxt)
            value = "\n".join(body)
        exprs.append((f"{rules_path}:{i + 1}", value))
for where, e in exprs:
    check_expr(where, e)
for lab in set(re.findall(r'\$labels\.(\w+)', text)):
    if lab not in all_labels:
        errors.append(f"{rules_path}: annotation uses $labels.{lab}, not a label the Go source exports")
if len(set(alerts)) != len(alerts):
    errors.append("an alert name is used twice")
# Every runbook names a Markdown file of the repository (a path from its
# root: README.md, docs/operations.md, ...) and a heading of that file, by
# GitHub's anchor: lower case, every character but letters, digits, '_', '-'
# and spaces dropped, spaces to hyphens, a repeated heading's anchor -1, -2.
# Headings inside fenced code blocks are none.
def heading_anchors(path):
    anchors, seen, fence = set(), {}, None
    for line in open(path, encoding="utf-8").read().splitlines():
        f = re.match(r' {0,3}(`{3,}|~{3,})', line)
        if f:
            if fence is None:
                fence = f.group(1)
            elif f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = re.match(r' {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$', line)
        if not m:
            continue
        h = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', m.group(1))  # a link's text
        a = "".join(c for c in h.strip().lower() if c.isalnum() or c in " _-").replace(" ", "-")
        n = seen.get(a, 0)
        seen[a] = n + 1
        anchors.add(a if n == 0 else f"{a}-{n}")
    return anchors
anchors_of = {}
runbooks = re.findall(r'^\s*runbook:\s*(.*?)\s*$', text, re.M)
if not runbooks:
    errors.append(f"{rules_path}: no runbook annotation found")
for rb in runbooks:
    rb = rb.strip('"\'')
    m = re.fullmatch(r'(\S+\.md)#([\w-]+)', rb)
    if not m:
        errors.append(f"{rules_path}: runbook {rb!r} is not <file>.md#<anchor>")
        continue
    md, a = m.groups()
    if md.startswith("/") or ".." in md.split("/"):
        errors.append(f"{rules_path}: runbook {rb!r}: {md} is not a path inside the repository")
        continue
    if md not in anchors_of:
        try:
            anchors_of[md] = heading_anchors(md)
        except OSError as e:
            anchors_of[md] = None
            errors.append(f"{rules_path}: runbook {rb!r}: cannot read {md} ({e.strerror})")
    if anchors_of[md] is not None and a not in anchors_of[md]:
        errors.append(f"{rules_path}: runbook {rb!r}: {md} has no heading with anchor #{a}")

# -- coverage by the tests
fires, silent, tested_exprs = set(), set(), set()
for p in test_paths:
    t = open(p).read()
    for m in re.finditer(r'alertname:\s*(\S+)\s*\n\s*exp_alerts:[ \t]*(\[\])?', t):
        name = m.group(1)
        if name not in alerts:
            errors.append(f"{p}: tests {name}, which is no alert of {rules_path}")
        (silent if m.group(2) else fires).add(name)
    tested_exprs.update(e.strip() for e in re.findall(r'-\s*expr:\s*(.+)', t))
for a in alerts:
    if a not in fires:
        errors.append(f"{a}: no test where it fires")
    if a not in silent:
        errors.append(f"{a}: no test where it stays silent (exp_alerts: [])")
for r in records:
    if r not in tested_exprs:
        errors.append(f"{r}: no promql_expr_test checks its value")

# -- the dashboard
try:
    dash = json.load(open(dash_path))
except ValueError as err:
    sys.exit(f"alerts-test: FAIL: {dash_path} is not valid JSON: {err}")
if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
    errors.append(f"{dash_path}: schemaVersion {dash.get('schemaVersion')!r}, want 36 or later")
variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
ds = variables.get("datasource", {})
if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
    errors.append(f"{dash_path}: no Prometheus datasource variable named datasource")
ids, panels, queries = set(), 0, 0
def uid_ok(d):
    return isinstance(d, dict) and d.get("uid") == "${datasource}"
for p in dash.get("panels", []):
    if p.get("id") in ids:
        errors.append(f"{dash_path}: panel id {p.get('id')} used twice")
    ids.add(p.get("id"))
    if p.get("type") == "row":
        continue
    panels += 1
    where = f"{dash_path}: panel {p.get('title')!r}"
    if not uid_ok(p.get("datasource")):
        errors.append(f"{where}: datasource is not ${{datasource}}")
    if not p.get("targets"):
        errors.append(f"{where}: no query")
    for t in p.get("targets", []):
        queries += 1
        if not uid_ok(t.get("datasource")):
            errors.append(f"{where}: a query's datasource is not ${{datasource}}")
        expr = t.get("expr", "")
        if not expr.strip():
            errors.append(f"{where}: an empty query")
        check_names(where, expr)
        check_expr(where, expr)
        for lab in re.findall(r'\{\{\s*(\w+)\s*\}\}', t.get("legendFormat", "")):
            if lab not in all_labels:
                errors.append(f"{where}: legend names {lab!r}, not a label the Go source exports")
for a in dash.get("annotations", {}).get("list", []):
    if "expr" in a:
        if not uid_ok(a.get("datasource")):
            errors.append(f"{dash_path}: annotation {a.get('name')!r}: datasource is not ${{datasource}}")
        check_names(dash_path, a["expr"])
for v in variables.values():
    q = v.get("query")
    if isinstance(q, dict):
        check_names(f"{dash_path}: variable {v.get('name')}", q.get("query", ""))

if errors:
    for e in errors:
        print("alerts-test: FAIL:", e, file=sys.stderr)
    sys.exit(1)
print(f"alerts-test: {len(alerts)} alerts (each seen firing and silent), {len(records)} recording rules "
      f"(each value checked), {len(families)} metric families known to the Go source; dashboard: "
      f"{panels} panels, {queries} queries", file=sys.stderr)
PY

# ---- optional: every alert's tests catch an expression that never fires
if ((mutations)); then
	alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$rules")
	mkdir -p "$tmp/mut/tests"
	cp "$prom"/tests/*.yml "$tmp/mut/tests/"
	n=0
	for a in $alerts; do
		# The expression (one line or a block) becomes one that never fires.
		"$PY" - "$rules" "$a" >"$tmp/mut/ticketd-rules.yml" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
out, i, inside, done = [], 0, False, False
while i < len(lines):
    line = lines[i]
    if re.match(r'\s*- alert:\s*' + re.escape(sys.argv[2]) + r'\s*$', line):
        inside = True
    elif inside and not done:
        m = re.match(r'(\s*)expr:\s*(.*)$', line)
        if m:
            out.append(f"{m.group(1)}expr: vector(1) < 0")
            if m.group(2) in ("|", ">", "|-", ">-"):
                while i + 1 < len(lines) and (not lines[i + 1].strip() or len(lines[i + 1]) - len(lines[i + 1].lstrip()) > len(m.group(1))):
                    i += 1
            done = True
            i += 1
            continue
    out.append(line)
    i += 1
if not done:
    sys.exit(f"no expr for {sys.argv[2]}")
print("\n".join(out), end="")
PY
		# The mutant must be valid rules: its tests must fail on what they
		# assert, not on a file promtool cannot load.
		timeout 60 promtool check rules "$tmp/mut/ticketd-rules.yml" >/dev/null 2>&1 ||
			fail "mutation: the rules with $a never firing do not load"
		files=$(grep -l "alertname: $a\$" "$tmp"/mut/tests/*.yml) || fail "mutation: no test file names $a"
		# shellcheck disable=SC2086 # one argument per file
		if timeout 120 promtool test rules $files >/dev/null 2>&1; then
			fail "mutation: $a never firing still passes its tests"
		fi
		n=$((n + 1))
	done
	log "mutations: each of $n alerts made never to fire fails its tests"
fi
log "OK"
