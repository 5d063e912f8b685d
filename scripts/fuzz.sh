#!/usr/bin/env bash
# Runs every Go fuzz target of every module of go.work (func FuzzXxx), one after another,
# each for the time given, and prints executions and findings per target.
# A crash fails the run; Go keeps the input under <package>/testdata/fuzz/
# FuzzXxx/, where it becomes a regression test of `go test` (fix the cause,
# keep the file).
#
#   scripts/fuzz.sh                     # every target, 10 minutes each
#   scripts/fuzz.sh --time 5s           # what CI runs (scripts/test.sh)
#   scripts/fuzz.sh --time 1h FuzzApplyLog FuzzAPIRequest
#   scripts/fuzz.sh --list
#   FUZZ_PARALLEL=1 scripts/fuzz.sh     # workers per target (default: every CPU)
#   FUZZ_MINIMIZE=60s scripts/fuzz.sh   # time to minimize a new input (default 10s)
#
# A summary goes to stdout and to fuzz-results/<timestamp>.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
time=10m
list=0
want=()
while (( $# )); do
  case $1 in
    --time) time=$2; shift 2 ;;
    --time=*) time=${1#--time=}; shift ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown flag $1" >&2; exit 2 ;;
    *) want+=("$1"); shift ;;
  esac
done

# "package target" per line, for every package with fuzz targets.
# The targets are read from the test files' source, not from `go test
# -list`, which builds and links every package's test binary first (22 s
# with a warm cache, more than a minute on CI's cold one). A target in a file
# with a build constraint would need that constraint to run: refused below.
targets=()
while read -r pkg dir; do
  for f in "$dir"/*_test.go; do
    [[ -e $f ]] || continue
    names=$(grep -oE '^func Fuzz[A-Za-z0-9_]*\(' "$f" | sed -E 's/^func //; s/\($//' || true)
    [[ -n $names ]] || continue
    if grep -q '^//go:build' "$f"; then
      echo "fuzz.sh: $f has a build constraint; its fuzz targets would not run here" >&2; exit 1
    fi
    for name in $names; do targets+=("$pkg $name"); done
  done
done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' $(go list -m -f '{{.Dir}}/...') | grep -v '^$')

if (( ${#want[@]} )); then
  sel=()
  for t in "${targets[@]}"; do
    for w in "${want[@]}"; do [[ ${t#* } == "$w" ]] && sel+=("$t"); done
  done
  (( ${#sel[@]} == ${#want[@]} )) || { echo "fuzz.sh: unknown target among: ${want[*]}" >&2; exit 2; }
  targets=("${sel[@]}")
fi
if (( list )); then printf '%s\n' "${targets[@]}"; exit 0; fi
(( ${#targets[@]} )) || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }

mkdir -p fuzz-results
summary=fuzz-results/$(date +%Y%m%dT%H%M%S).txt
parallel=()
[[ -n ${FUZZ_PARALLEL:-} ]] && parallel=(-parallel "$FUZZ_PARALLEL")
printf '%-40s %-24s %8s %14s %10s %s\n' package target time execs "new-corpus" result | tee "$summary"
failed=0
for t in "${targets[@]}"; do
  pkg=${t% *}; name=${t#* }
  log=$(mktemp)
  start=$(date +%s)
  corpus=$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  # -timeout 0: go test's default 10-minute timeout would otherwise race a
  # 10-minute -fuzztime; -fuzztime is what bounds the run.
  for attempt in 1 2; do
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" -fuzzminimizetime "${FUZZ_MINIMIZE:-10s}" -timeout 0 "${parallel[@]}" "$pkg" >"$log" 2>&1; then
      result=ok; break
    fi
    after=$(ls "$corpus" 2>/dev/null | sort || true)
    # Go 1.26's fuzz coordinator can fail a run at the -fuzztime deadline
    # with "context deadline exceeded" and no failing input (a race in
    # internal/fuzz, golang/go#75804, fixed in Go 1.27). Such a run found
    # nothing: it is run once more, and not counted as a failure if it
    # happens again. A real failure always writes its input.
    if [[ $before == "$after" ]] && grep -q 'context deadline exceeded' "$log" && ! grep -q -e 'panic:' -e 'Failing input written' "$log"; then
      result="ok (deadline race, golang/go#75804)"
      continue
    fi
    result=FAIL; failed=1
    break
  done
  # The last progress line: "fuzz: elapsed: 10m0s, execs: 1234567 (2057/sec), new interesting: 12 (total: 80)".
  last=$(grep -E '^fuzz: elapsed: .*execs: [0-9]+' "$log" | tail -1 || true)
  execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
  fresh=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
  printf '%-40s %-24s %7ss %14s %10s %s\n' "${pkg#github.com/ticketd/ticketd/}" "$name" "$(( $(date +%s) - start ))" "${execs:-?}" "${fresh:-?}" "$result" | tee -a "$summary"
  if [[ $result == FAIL ]]; then
    echo "---- $name output (tail) ----" >&2
    tail -40 "$log" >&2
    echo "---- the crashing input, if any, is under ${pkg#github.com/ticketd/ticketd/}/testdata/fuzz/$name/ ----" >&2
  fi
  rm -f "$log"
done
echo "summary: $summary"
exit "$failed"
