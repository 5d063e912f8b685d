#!/usr/bin/env bash
# The unit tests of the client libraries in other languages (issue 33), each in
# its own runner, from Debian's packages alone (PyPI and Maven Central are not
# reachable here):
#
#   scripts/clients-test.sh            # Python, then Java
#   scripts/clients-test.sh python     # one of them
#
#   Python: clients/python/tests with Debian's python3-pytest under Debian's
#           /usr/bin/python3 (python3 on PATH may be another), against the
#           tests' in-process stand-in node, and the tests against a real
#           ticketd process built from this tree (forks, and a real uWSGI
#           from Debian's uwsgi-core, uwsgi-plugin-python3 and
#           python3-uwsgidecorators).
#   Java:   clients/java/build.sh test: Maven with Debian's repository
#           (clients/java/settings.xml) running the JUnit 5 tests.
#
# Installs what is missing with apt-get (as root, or through sudo). The
# conformance suite (scripts/conformance.sh) drives the same libraries
# against a real cluster under faults.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
langs=("$@")
(( ${#langs[@]} )) || langs=(python java)

sudo=()
[[ $(id -u) == 0 ]] || sudo=(sudo)
install() {
	echo "clients-test: installing $*"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
		{ "${sudo[@]}" apt-get update -qq && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; }
}

for l in "${langs[@]}"; do
	case $l in
	python)
		PY=/usr/bin/python3
		[[ -x $PY ]] && (cd / && "$PY" -I -c 'import pytest') 2>/dev/null || install python3 python3-pytest
		# tests/test_uwsgi.py: a real uWSGI's prefork workers (issue 45).
		[[ -e /usr/lib/uwsgi/plugins/python3_plugin.so && -e /usr/lib/python3/dist-packages/uwsgidecorators.py ]] ||
			install uwsgi-core uwsgi-plugin-python3 python3-uwsgidecorators
		tmp=$(mktemp -d)
		go build -o "$tmp/ticketd" ./cmd/ticketd
		echo "== clients-test: Python (pytest $("$PY" -I -m pytest --version 2>&1 | awk '{print $2}'), $("$PY" --version))"
		# -p no:cacheprovider: no .pytest_cache left in the tree.
		(cd clients/python && TICKETD_BIN="$tmp/ticketd" "$PY" -m pytest -q -p no:cacheprovider) || { rm -rf "$tmp"; exit 1; }
		rm -rf "$tmp"
		clients/python/release-check.sh # the sdist and wheel a release would ship, checked (issue 46)
		;;
	java)
		echo "== clients-test: Java (JUnit 5 through Maven, Debian's repository)"
		clients/java/build.sh test
		clients/java/build.sh release # the jar, sources and javadoc jars a release would ship, checked (issue 46)
		;;
	*)
		echo "clients-test: unknown language '$l' (python, java)" >&2
		exit 2
		;;
	esac
done
echo "clients-test: passed"
