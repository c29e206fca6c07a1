#!/usr/bin/env bash
# Start-up cost of the OpenTelemetry support when OpenTelemetry is absent: the same applications
# with an agent jar built without it (BEFORE) and with it (agent/target/retry-agent.jar),
# interleaved round by round, on JDK 17 and 25. OneUrl makes one call (so the engine is built and
# asks once whether the OpenTelemetry agent is there), OneClient builds an HttpClient and makes
# none. Prints the median wall and CPU time of each variant and the classes each one loads.
#
#   BEFORE=/path/to/old/retry-agent.jar [AFTER=...] agent/bench/otel-startup.sh [--runs N]
#
# Needs agent/target/retry-agent.jar (mvn -B -ntp -pl agent -am package -DskipTests).
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=15
[[ ${1:-} == --runs ]] && runs=$2
AFTER=${AFTER:-agent/target/retry-agent.jar}
: "${BEFORE:?set BEFORE to the agent jar to compare with}"
JDK17=${JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
JDK25=${JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$JDK17/bin/javac" -nowarn --release 11 -d "$work/apps" agent/bench/apps/OneUrl.java \
  agent/bench/apps/OneClient.java

for jdk in 17 25; do
  home=$JDK17; [[ $jdk == 25 ]] && home=$JDK25
  for app in OneUrl OneClient; do
    add "JDK $jdk, $app, before" "$home/bin/java -javaagent:$BEFORE -cp $work/apps $app"
    add "JDK $jdk, $app, after" "$home/bin/java -javaagent:$AFTER -cp $work/apps $app"
  done
done

n=${#cmds[@]}
declare -a wall cpu classes
TIMEFORMAT='%R %U %S'
for ((i = 0; i < n; i++)); do
  classes[$i]=$(bash -c "${cmds[$i]/-cp/-Xlog:class+load=info -cp}" 2>/dev/null | grep -c 'class,load')
done
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
echo "| variant | median wall ms | median CPU ms (user+sys) | classes loaded |"
echo "|---|---:|---:|---:|"
for ((i = 0; i < n; i++)); do
  printf '| %s | %s | %s | %s |\n' "${labels[$i]}" "$(median "${wall[$i]}")" "$(median "${cpu[$i]}")" "${classes[$i]}"
done
