#!/usr/bin/env bash
# The one entry point of the Java client's build: installs the Debian packages it needs when
# they are missing (CI runs it as root), then builds with Maven from Debian's local repository
# only (settings.xml: every repository is mirrored to file:///usr/share/maven-repo).
#   build.sh test              compile and run the JUnit 5 tests (surefire)
#   build.sh package           the jar, target/ticketd-client-<version>.jar (tests run first)
#   build.sh bench [forks iterations warmup millis]
#                              the hot-path benchmark (next() vs AtomicLong), see README.md
#   build.sh driver-classpath  compile main+test classes, print the conformance driver's classpath
#   build.sh release           the three jars a release carries (jar, sources, javadoc; javadoc with
#                              every doclint check, a warning fails it), then checks them; the tests
#                              are build.sh test's (CI runs it first), so they are not run again
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

pkgs=(openjdk-17-jdk-headless maven junit5 libsurefire-java libmaven-compiler-plugin-java
      libmaven-jar-plugin-java libmaven-resources-plugin-java libmaven-install-plugin-java
      libjackson2-databind-java libgoogle-gson-java)
# The release profile's plugins (pom.xml), needed by build.sh release only.
[[ ${1:-} == release ]] && pkgs+=(libmaven-source-plugin-java libmaven-javadoc-plugin-java)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "build.sh: installing ${missing[*]}" >&2
  if [[ $(id -u) -ne 0 ]]; then echo "build.sh: need root to apt-get install ${missing[*]}" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >&2 || { apt-get update -q >&2 && apt-get install -y -q "${missing[@]}" >&2; }
fi

mvn=(mvn -B -q -s "$here/settings.xml")
cmd="${1:-test}"
case "$cmd" in
  test)    "${mvn[@]}" test ;;
  package) "${mvn[@]}" package ;;
  bench)
    "${mvn[@]}" test-compile >&2
    # TICKETD_JAVA picks another JVM for the run (the library is built for 17 and runs on later ones).
    exec "${TICKETD_JAVA:-java}" -cp target/classes:target/test-classes io.ticketd.client.Bench "${@:2}" ;;
  driver-classpath)
    "${mvn[@]}" test-compile >&2
    echo "$here/target/classes:$here/target/test-classes" ;;
  release)
    version="$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -1)"
    jar="target/ticketd-client-$version.jar"
    rm -f target/ticketd-client-*.jar
    log="$(mktemp)"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$log" "$tmp"' EXIT
    # Not -q: javadoc's warnings are Maven warnings, which -q hides; the check below reads them.
    if ! mvn -B -s "$here/settings.xml" -Prelease -DskipTests package >"$log" 2>&1; then
      cat "$log" >&2; echo "build.sh release: FAIL: the build failed" >&2; exit 1
    fi
    fail() { echo "build.sh release: FAIL: $*" >&2; exit 1; }
    for j in "$jar" "${jar%.jar}-sources.jar" "${jar%.jar}-javadoc.jar"; do [[ -s $j ]] || fail "no $j"; done
    # javadoc ran with doclint all and failOnWarnings; its output must hold no warning either.
    if grep -E '(: warning|\[WARNING\])' "$log" >&2; then fail "the build printed the warnings above"; fi
    # The module name the JDK derives from the jar, and the manifest entry it comes from.
    jar --describe-module --file="$jar" | grep -qx "io.ticketd.client@$version automatic" || fail "$jar: no automatic module io.ticketd.client"
    (cd "$tmp" && jar xf "$here/$jar" META-INF/MANIFEST.MF META-INF/LICENSE "META-INF/maven/io.ticketd/ticketd-client/pom.xml")
    grep -q '^Automatic-Module-Name: io.ticketd.client' "$tmp/META-INF/MANIFEST.MF" || fail "$jar: no Automatic-Module-Name in the manifest"
    cmp -s "$tmp/META-INF/LICENSE" ../../LICENSE || fail "$jar: META-INF/LICENSE is not the repository's LICENSE"
    for tag in licenses developers scm url description; do
      grep -q "<$tag>" "$tmp/META-INF/maven/io.ticketd/ticketd-client/pom.xml" || fail "the pom has no <$tag>"
    done
    jar tf "$jar" | grep -q '^io/ticketd/client/TicketdClient.class$' || fail "$jar: no TicketdClient.class"
    if jar tf "$jar" | grep -E 'StandIn|ConformanceDriver|Test'; then fail "$jar holds test classes"; fi
    # The sources jar holds every main source file, and no test source.
    (cd src/main/java && find . -name '*.java' | sed 's:^\./::' | sort) >"$tmp/want"
    jar tf "${jar%.jar}-sources.jar" | grep '\.java$' | sort >"$tmp/got"
    diff "$tmp/want" "$tmp/got" >&2 || fail "the sources jar does not hold exactly src/main/java"
    # The javadoc jar: its index, and a page per public class (under io.ticketd.client/: the
    # javadoc plugin documents the jar as the automatic module its manifest names).
    jar tf "${jar%.jar}-javadoc.jar" >"$tmp/doc"
    grep -qx 'index.html' "$tmp/doc" || fail "the javadoc jar has no index.html"
    for c in $(grep -l '^public ' src/main/java/io/ticketd/client/*.java | xargs -n1 basename | sed 's/\.java$//'); do
      grep -Eqx "(io\.ticketd\.client/)?io/ticketd/client/$c\.html" "$tmp/doc" || fail "the javadoc jar has no page for $c"
    done
    echo "build.sh release: ok: $jar (Automatic-Module-Name io.ticketd.client), ${jar%.jar}-sources.jar ($(wc -l <"$tmp/got") sources), ${jar%.jar}-javadoc.jar (doclint all, 0 warnings)"
    ;;
  *) echo "usage: build.sh [test|package|bench|driver-classpath|release]" >&2; exit 2 ;;
esac
