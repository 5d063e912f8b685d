#!/usr/bin/env bash
# What a release of the Python client would ship, built and checked the way
# a user would take it (issue 46, part 8), with Debian's packages only (PyPI
# is not reachable here):
#
#   clients/python/release-check.sh             # checks, then removes what it built
#   clients/python/release-check.sh --out DIR   # and keeps the checked sdist and wheel in DIR
#
# - LICENSE here is the repository's LICENSE, byte for byte (a package built
#   from this directory cannot reach ../../LICENSE, so it keeps a copy);
# - README.md has no relative link, which a package index would break, and
#   its links into the repository name files that exist;
# - an sdist, and a wheel built from that sdist (python3-build, without
#   isolation: setuptools and wheel from Debian), into a temporary directory;
# - twine check --strict on both (the metadata and the README as an index
#   would render them);
# - the wheel holds every module, py.typed, the LICENSE, and METADATA with the
#   package's one version (src/ticketd/__init__.py); the sdist holds the
#   LICENSE and py.typed;
# - the wheel installs into a fresh venv (pip --no-index: offline) and imports
#   there, with that version.
#
# Installs what is missing with apt-get (as root, or through sudo). Leaves
# nothing behind: the build runs on a copy in a temporary directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=/usr/bin/python3
out=
if [[ ${1:-} == --out ]]; then
	[[ -n ${2:-} ]] || { echo "usage: $0 [--out DIR]" >&2; exit 2; }
	mkdir -p "$2"
	out=$(cd "$2" && pwd)
elif (( $# )); then
	echo "usage: $0 [--out DIR]" >&2
	exit 2
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

sudo=()
[[ $(id -u) == 0 ]] || sudo=(sudo)
need=()
for pkg in python3 python3-build python3-setuptools python3-wheel twine python3-venv python3-pip; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || need+=("$pkg")
done
if (( ${#need[@]} )); then
	echo "release-check: installing ${need[*]}"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
		{ "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; }
fi

fail() { echo "release-check: FAIL: $*" >&2; exit 1; }

cmp -s "$here/LICENSE" "$root/LICENSE" ||
	fail "clients/python/LICENSE differs from the repository's LICENSE: cp LICENSE clients/python/LICENSE"

# The README is the package's page on an index, where a relative link leads nowhere.
"$PY" -I - "$here/README.md" "$root" <<'EOF' || fail "README.md's links (above)"
import os, re, sys
readme, root = sys.argv[1], sys.argv[2]
repo = "https://github.com/ticketd/ticketd/"
text = open(readme, encoding="utf-8").read()
text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks are not links
text = re.sub(r"`[^`\n]*`", "", text)
bad = []
for target in re.findall(r"\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"", text):
    t = target[0] or target[1]
    if t.startswith(repo):
        m = re.match(r"(?:blob|tree)/main/([^#?]*)", t[len(repo):])
        if m and not os.path.exists(os.path.join(root, m.group(1))):
            bad.append(f"{t}: no {m.group(1)} in this checkout")
    elif not re.match(r"(https?:|mailto:)", t):
        bad.append(f"{t}: relative (or an anchor), which breaks on a package index; link {repo}blob/main/...")
for b in bad:
    print(f"release-check: README.md: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tree" "$tmp/dist"
# A copy, so that the build's egg-info and build/ stay out of the checkout.
tar -C "$here" --exclude=__pycache__ --exclude=.mypy_cache --exclude=.pytest_cache --exclude='*.egg-info' \
	--exclude=./build --exclude=./dist -cf - . | tar -C "$tmp/tree" -xf -

version=$("$PY" -I -c 'import ast, sys
for node in ast.parse(open(sys.argv[1]).read()).body:
    if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__version__"]:
        print(node.value.value)' "$here/src/ticketd/__init__.py")
[[ -n $version ]] || fail "no __version__ in src/ticketd/__init__.py"
echo "== release-check: ticketd $version (setuptools $("$PY" -I -c 'import setuptools; print(setuptools.__version__)'), build $("$PY" -I -c 'import build; print(build.__version__)'), twine $(twine --no-color --version 2>/dev/null | awk 'NR == 1 {print $3}'))"

# The sdist first, then the wheel from the sdist: a file the sdist lacks fails the build here.
(cd "$tmp" && "$PY" -I -m build --no-isolation --outdir "$tmp/dist" "$tmp/tree" >"$tmp/build.log" 2>&1) ||
	{ tail -40 "$tmp/build.log" >&2; fail "python3 -m build"; }
sdist=$(ls "$tmp"/dist/*.tar.gz)
wheel=$(ls "$tmp"/dist/*.whl)
echo "release-check: built $(basename "$sdist") ($(stat -c %s "$sdist") bytes), $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"

twine --no-color check --strict "$sdist" "$wheel" || fail "twine check --strict"

"$PY" -I - "$wheel" "$sdist" "$version" "$here/src/ticketd" "$root/LICENSE" <<'EOF' || fail "the artifacts' contents (above)"
import os, sys, tarfile, zipfile
from email.parser import Parser
wheel, sdist, version, src, license_path = sys.argv[1:]
problems = []
license = open(license_path, "rb").read()
with zipfile.ZipFile(wheel) as z:
    names = wheel_names = set(z.namelist())
    info = f"ticketd-{version}.dist-info"
    for py in sorted(f for f in os.listdir(src) if f.endswith(".py")) + ["py.typed"]:
        if f"ticketd/{py}" not in names:
            problems.append(f"the wheel lacks ticketd/{py}")
    if f"{info}/LICENSE" not in names:
        problems.append(f"the wheel lacks {info}/LICENSE")
    elif z.read(f"{info}/LICENSE") != license:
        problems.append("the wheel's LICENSE is not the repository's")
    meta = Parser().parsestr(z.read(f"{info}/METADATA").decode()) if f"{info}/METADATA" in names else None
    if meta is None:
        problems.append(f"the wheel lacks {info}/METADATA")
    else:
        want = {"Name": "ticketd", "Version": version, "License": "Apache-2.0", "Requires-Python": ">=3.9",
                "Description-Content-Type": "text/markdown"}
        for k, v in want.items():
            if meta.get(k) != v:
                problems.append(f"METADATA {k}: {meta.get(k)!r}, want {v!r}")
        for c in ("License :: OSI Approved :: Apache Software License", "Typing :: Typed",
                  "Development Status :: 3 - Alpha", "Operating System :: OS Independent"):
            if c not in meta.get_all("Classifier", []):
                problems.append(f"METADATA lacks the classifier {c!r}")
        if not any(u.startswith("Source, https://") for u in meta.get_all("Project-URL", [])):
            problems.append("METADATA has no Source URL")
        if "](../" in meta.get_payload():
            problems.append("the long description has relative links")
with tarfile.open(sdist) as t:
    names = set(t.getnames())
    top = f"ticketd-{version}"
    for f in ("LICENSE", "PKG-INFO", "README.md", "pyproject.toml", "src/ticketd/py.typed", "src/ticketd/__init__.py"):
        if f"{top}/{f}" not in names:
            problems.append(f"the sdist lacks {f}")
for p in problems:
    print(f"release-check: {p}", file=sys.stderr)
if not problems:
    print(f"release-check: the wheel's {len(wheel_names)} files hold every module, py.typed, LICENSE and "
          f"METADATA of version {version}; the sdist's {len(names)} hold LICENSE and py.typed")
sys.exit(1 if problems else 0)
EOF

# Installed as a user would: a fresh venv, the wheel alone, no index.
"$PY" -I -m venv "$tmp/venv" || fail "python3 -m venv (python3-venv)"
"$tmp/venv/bin/python" -I -m pip install --quiet --no-index --no-deps "$wheel" || fail "pip install of the wheel"
(cd / && "$tmp/venv/bin/python" -I - "$version" "$tmp/venv" <<'EOF') || fail "the installed wheel does not import as it should"
import importlib.metadata, os, sys
import ticketd
version, venv = sys.argv[1:]
assert ticketd.__file__.startswith(os.path.realpath(venv)) or ticketd.__file__.startswith(venv), ticketd.__file__
assert ticketd.__version__ == importlib.metadata.version("ticketd") == version, (ticketd.__version__, version)
assert os.path.exists(os.path.join(os.path.dirname(ticketd.__file__), "py.typed"))
c = ticketd.Client(["http://127.0.0.1:1"], token=lambda: "t" * 24)
c.close()
print(f"release-check: installed into a venv: ticketd {ticketd.__version__} imports from {os.path.dirname(ticketd.__file__)}")
EOF
if [[ -n $out ]]; then
	cp "$sdist" "$wheel" "$out/"
	echo "release-check: kept $(basename "$sdist") and $(basename "$wheel") in $out"
fi
echo "release-check: passed"
