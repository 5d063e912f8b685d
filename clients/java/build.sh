#!/usr/bin/env bash
# The one entry point of the Java client's build: installs the Debian packages it needs when
# they are missing (CI runs it as root), then builds with Maven from Debian's local repository
# only (settings.xml: every repository is mirrored to file:///usr/share/maven-repo).
#   build.sh test              compile and run the JUnit 5 tests (surefire)
#   build.sh package           the jar, target/ticketd-client-<version>.jar (tests run first)
#   build.sh bench [forks iterations warmup millis]
#                              the hot-path benchmark (next() vs AtomicLong), see README.md
#   build.sh driver-classpath  compile main+test classes, print the conformance driver's classpath
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

pkgs=(openjdk-17-jdk-headless maven junit5 libsurefire-java libmaven-compiler-plugin-java
      libmaven-jar-plugin-java libmaven-resources-plugin-java libmaven-install-plugin-java
      libjackson2-databind-java libgoogle-gson-java)
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
  *) echo "usage: build.sh [test|package|bench|driver-classpath]" >&2; exit 2 ;;
esac
