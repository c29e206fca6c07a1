#!/usr/bin/env bash
# How much of an application's class-data sharing survives the agent: for the Spring Boot OkHttp
# fat jar (test-apps/okhttp-boot-app, two calls to a loopback server) and an application that
# builds one HttpClient (agent/bench/apps/OneClient), on JDK 17 and 25:
#
#   - a dynamic CDS archive (-XX:ArchiveClassesAtExit) dumped without the agent, run without and
#     with it; for OneClient also a static AppCDS archive (-Xshare:dump of its class list);
#   - on JDK 25, an AOT cache trained with the agent (-XX:AOTCacheOutput), run with it and, for
#     reference, without it (--add-modules java.instrument, which the cache then needs).
#
# "served" counts the classes -Xlog:class+load reports from "shared objects file"; "lost" the
# classes the archive served without the agent that the run with the agent loaded from elsewhere.
# Prints a markdown table; ClassSharingIT asserts the same on every build.
#
#   agent/bench/class-sharing.sh [--compare OTHER.jar]
#
# Needs agent/target/retry-agent.jar and test-apps/okhttp-boot-app/target/okhttp-boot-app.jar
# (mvn -B -ntp -pl agent,test-apps/okhttp-boot-app -am package -DskipTests). --compare adds the
# same rows for another build of the agent jar (say, the one before a change).
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
compare=
while [ $# -gt 0 ]; do
  case "$1" in
    --compare) compare=$(readlink -f "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

BOOT=$PWD/test-apps/okhttp-boot-app/target/okhttp-boot-app.jar
for f in "$AGENT" "$BOOT"; do [ -f "$f" ] || { echo "build it first: $f is missing" >&2; exit 1; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$JDK17/bin/javac" -nowarn --release 11 -d "$work/apps" agent/bench/apps/OneClient.java
printf 'Main-Class: OneClient\n' > "$work/one.mf"
(cd "$work/apps" && "$JDK17/bin/jar" cfm ../one-client.jar ../one.mf OneClient.class)

start_boot_server
url=$boot_url

app() { # app NAME -> the command line after the JVM options
  case $1 in
    boot) echo "-jar $BOOT $url" ;;
    one) echo "-jar $work/one-client.jar" ;;
  esac
}

# served LOG: "served/loaded"; names are normalised (a lambda's or hidden class's address varies)
classes() { sed -n 's/.*\[class,load *\] *\([^ ]*\) *source: \(.*\)$/\1 \2/p' "$1" \
  | sed -e 's#/0x[0-9a-f]*##' -e 's/\$\$Lambda\$*[0-9]*/$$Lambda/' | awk '!seen[$1]++'; }
served() { classes "$1" | awk '{n++} / shared objects file/ {s++} END {printf "%d/%d", s, n}'; }
lost() { # lost REF_LOG LOG: served in REF, loaded in LOG, not served there
  awk 'FNR == NR { if ($0 ~ / shared objects file/) ref[$1] = 1; next }
       ($1 in ref) && $0 !~ / shared objects file/ { n++; names = names " " $1 }
       END { printf "%d%s", n, (n > 0 && n <= 6) ? " (" substr(names, 2) ")" : "" }' \
    <(classes "$1") <(classes "$2")
}
# dump COMMAND...: JDK 25 can crash dumping an archive at exit while an HttpClient thread still
# spins a lambda (SIGSEGV in LambdaProxyClassDictionary, no agent involved): try up to 3 times.
dump() { # dump JAVA OPTIONS...
  local java=$1
  shift
  for _ in 1 2 3; do "$java" -XX:ErrorFile="$work/hs_err_%p.log" "$@" >/dev/null 2>&1 && return 0; done
  echo "dump failed 3 times: $*" >&2
  return 1
}
warns() { grep -q 'Sharing is only supported' "$1" && echo "warning" || echo "none"; }

jars=("$AGENT"); names=(retry-agent)
[ -n "$compare" ] && { jars+=("$compare"); names+=(compare); }

run_header
echo "retry-agent: $AGENT${compare:+; compare: $compare}"
echo
echo "| JDK | app | archive | agent | served/loaded without agent | served/loaded with agent | lost | sharing warning |"
echo "|---|---|---|---|---:|---:|---|---|"
for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  j=$home/bin/java
  for a in boot one; do
    jsa=$work/$a-$jdk.jsa
    dump $j -XX:ArchiveClassesAtExit="$jsa" $(app $a)
    $j -XX:SharedArchiveFile="$jsa" -Xlog:class+load:file="$work/ref.log" $(app $a) >/dev/null 2>&1
    for i in "${!jars[@]}"; do
      $j -XX:SharedArchiveFile="$jsa" -Xlog:class+load:file="$work/run.log" \
        -javaagent:"${jars[$i]}" $(app $a) >"$work/out.txt" 2>&1
      echo "| $jdk | $a | dynamic CDS, dumped without agent | ${names[$i]} | $(served "$work/ref.log") | $(served "$work/run.log") | $(lost "$work/ref.log" "$work/run.log") | $(warns "$work/out.txt") |"
    done
    if [ $a = one ]; then # a static AppCDS archive too (nested jars never go into one)
      cl=$work/one-$jdk.classlist; sjsa=$work/one-$jdk-static.jsa
      dump $j -XX:DumpLoadedClassList="$cl" --add-modules java.instrument $(app one)
      $j -Xshare:dump -XX:SharedClassListFile="$cl" -XX:SharedArchiveFile="$sjsa" \
        --add-modules java.instrument -cp "$work/one-client.jar" >/dev/null 2>&1
      $j -XX:SharedArchiveFile="$sjsa" --add-modules java.instrument \
        -Xlog:class+load:file="$work/ref.log" $(app one) >/dev/null 2>&1
      for i in "${!jars[@]}"; do
        $j -XX:SharedArchiveFile="$sjsa" -Xlog:class+load:file="$work/run.log" \
          -javaagent:"${jars[$i]}" $(app one) >"$work/out.txt" 2>&1
        echo "| $jdk | $a | static AppCDS, dumped with --add-modules java.instrument | ${names[$i]} | $(served "$work/ref.log") | $(served "$work/run.log") | $(lost "$work/ref.log" "$work/run.log") | $(warns "$work/out.txt") |"
      done
    fi
    [ $jdk = 25 ] || continue
    for i in "${!jars[@]}"; do
      aot=$work/$a-${names[$i]}.aot
      dump $j -XX:AOTCacheOutput="$aot" -javaagent:"${jars[$i]}" $(app $a)
      $j -XX:AOTCache="$aot" --add-modules java.instrument -Xlog:class+load:file="$work/ref.log" \
        $(app $a) >/dev/null 2>&1
      $j -XX:AOTCache="$aot" -Xlog:class+load:file="$work/run.log" -javaagent:"${jars[$i]}" \
        $(app $a) >"$work/out.txt" 2>&1
      echo "| $jdk | $a | AOT cache, trained with the agent | ${names[$i]} | $(served "$work/ref.log") | $(served "$work/run.log") | $(lost "$work/ref.log" "$work/run.log") | $(warns "$work/out.txt") |"
    done
  done
done
