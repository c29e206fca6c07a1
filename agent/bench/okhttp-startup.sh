#!/usr/bin/env bash
# Startup cost of the agent for OkHttp applications: wall and CPU time of a JVM that builds one
# OkHttpClient (OkHttpOneClient) or builds one and makes one GET to a loopback server in the same
# process (OkHttpOneCall), with and without -javaagent, on JDK 17 and 25, OkHttp 4.12.0 (and 3.14.9,
# 5.5.1 for the call on JDK 17). Runs are interleaved, one of each variant per round; reports the
# median and the ratio to the same application without the agent.
#
#   agent/bench/okhttp-startup.sh [--runs N] [--compare OTHER.jar] [--only-call]
#
# --only-call: OkHttp 4.12.0's OkHttpOneCall alone (no agent, built-in defaults, config/llm-provider.yml),
# the rows of issue 13's start-up target, for a shorter run.
#
# --compare adds the same retry-agent rows for another build of the jar, in the same rounds.
#
# Needs agent/target/retry-agent.jar (mvn -B -ntp -pl agent -am package -DskipTests) and the OkHttp
# jars in the local Maven repository (any build of core or integration-tests puts them there).
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=10
compare=
onlycall=false
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --compare) compare=$(readlink -f "$2"); shift 2 ;;
    --only-call) onlycall=true; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

[ -f "$AGENT" ] || { echo "build the agent first: $AGENT is missing" >&2; exit 1; }
M2=${M2:-$HOME/.m2/repository}
ok3="$M2/com/squareup/okhttp3/okhttp/3.14.9/okhttp-3.14.9.jar:$M2/com/squareup/okio/okio/1.17.2/okio-1.17.2.jar"
ok4="$M2/com/squareup/okhttp3/okhttp/4.12.0/okhttp-4.12.0.jar:$M2/com/squareup/okio/okio-jvm/3.6.0/okio-jvm-3.6.0.jar"
ok4="$ok4:$M2/org/jetbrains/kotlin/kotlin-stdlib/1.8.21/kotlin-stdlib-1.8.21.jar"
ok4="$ok4:$M2/org/jetbrains/kotlin/kotlin-stdlib-common/1.9.10/kotlin-stdlib-common-1.9.10.jar"
ok5="$M2/com/squareup/okhttp3/okhttp-jvm/5.5.1/okhttp-jvm-5.5.1.jar:$M2/com/squareup/okio/okio-jvm/3.18.1/okio-jvm-3.18.1.jar"
ok5="$ok5:$M2/org/jetbrains/kotlin/kotlin-stdlib/2.1.21/kotlin-stdlib-2.1.21.jar"
for jar in $(tr ':' ' ' <<<"$ok3:$ok4:$ok5"); do
  [ -f "$jar" ] || { echo "missing $jar (build core or integration-tests once)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$JDK17/bin/javac" -nowarn --release 11 -cp "$ok3" -d "$work/apps" agent/bench/okhttp-apps/*.java

labels=(); cmds=(); keys=()
add() { labels+=("$1"); keys+=("$2"); cmds+=("$3"); }
for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  apps="OkHttpOneClient OkHttpOneCall"; $onlycall && apps=OkHttpOneCall
  for app in $apps; do
    add "JDK $jdk, OkHttp 4.12.0, $app, no agent" "$jdk$app 4" "$home/bin/java -cp $work/apps:$ok4 $app"
    add "JDK $jdk, OkHttp 4.12.0, $app, retry-agent" "$jdk$app 4" "$home/bin/java -javaagent:$AGENT -cp $work/apps:$ok4 $app"
    if [ -n "$compare" ]; then
      add "JDK $jdk, OkHttp 4.12.0, $app, compare" "$jdk$app 4" "$home/bin/java -javaagent:$compare -cp $work/apps:$ok4 $app"
    fi
  done
  # The same call with a configuration file (issue 13's target is "with a configuration file").
  add "JDK $jdk, OkHttp 4.12.0, OkHttpOneCall, retry-agent, config/llm-provider.yml" "${jdk}OkHttpOneCall 4" "$home/bin/java -javaagent:$AGENT=$PWD/config/llm-provider.yml -cp $work/apps:$ok4 OkHttpOneCall"
  if [ -n "$compare" ]; then
    add "JDK $jdk, OkHttp 4.12.0, OkHttpOneCall, compare, config/llm-provider.yml" "${jdk}OkHttpOneCall 4" "$home/bin/java -javaagent:$compare=$PWD/config/llm-provider.yml -cp $work/apps:$ok4 OkHttpOneCall"
  fi
  $onlycall && continue
  # The agent starts its JMX exporter 1 s after start-up, inside this application's life; this
  # row moves it past the end to show the OkHttp hook and the engine without it.
  add "JDK $jdk, OkHttp 4.12.0, OkHttpOneCall, retry-agent, exporters after exit" "${jdk}OkHttpOneCall 4" "$home/bin/java -Dretryagent.exporters.delayMillis=60000 -javaagent:$AGENT -cp $work/apps:$ok4 OkHttpOneCall"
done
for v in 3 5; do
  $onlycall && break
  cp=$ok3; name=3.14.9; [ $v = 5 ] && { cp=$ok5; name=5.5.1; }
  add "JDK 17, OkHttp $name, OkHttpOneCall, no agent" "17 call $v" "$JDK17/bin/java -cp $work/apps:$cp OkHttpOneCall"
  add "JDK 17, OkHttp $name, OkHttpOneCall, retry-agent" "17 call $v" "$JDK17/bin/java -javaagent:$AGENT -cp $work/apps:$cp OkHttpOneCall"
  if [ -n "$compare" ]; then
    add "JDK 17, OkHttp $name, OkHttpOneCall, compare" "17 call $v" "$JDK17/bin/java -javaagent:$compare -cp $work/apps:$cp OkHttpOneCall"
  fi
done

n=${#cmds[@]}
declare -a wall cpu
TIMEFORMAT='%R %U %S'
for ((i = 0; i < n; i++)); do bash -c "${cmds[$i]}" >/dev/null 2>&1; done # warm the file cache
for ((r = 1; r <= runs; r++)); do
  for ((i = 0; i < n; i++)); do
    t=$({ time bash -c "${cmds[$i]}" >/dev/null 2>&1; } 2>&1)
    read -r real user sys <<<"$t"
    wall[$i]+="$(echo "$real * 1000 / 1" | bc) "
    cpu[$i]+="$(echo "($user + $sys) * 1000 / 1" | bc) "
  done
  echo "round $r/$runs done" >&2
done

results_header "$runs"
echo "| variant | median wall ms | ratio | median CPU ms (user+sys) |"
echo "|---|---:|---:|---:|"
declare -A base
for ((i = 0; i < n; i++)); do
  w=$(median "${wall[$i]}"); c=$(median "${cpu[$i]}")
  [[ ${labels[$i]} == *"no agent"* ]] && base[${keys[$i]}]=$w
  ratio=$(echo "scale=2; $w / ${base[${keys[$i]}]}" | bc)
  printf '| %s | %s | %s | %s |\n' "${labels[$i]}" "$w" "$ratio" "$c"
done
