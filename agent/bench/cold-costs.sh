#!/usr/bin/env bash
# The first use of a few JDK facilities in a fresh JVM (agent/bench/apps/ColdCost), on JDK 17 and
# JDK 25: what issue 13's fifth pass took out of premain. Interleaved rounds; medians in ms.
#
#   agent/bench/cold-costs.sh [--runs N] [--compare OTHER.jar]
#
# The zip-open rows open the agent jar (and OTHER.jar, say one built before a change) and a jar of
# one class: the JVM pays this when it opens an agent jar for -javaagent. The pack-read rows read
# from each jar's class pack the classes its class loader reads in a run of OneClient with
# config/llm-provider.yml (premain's, then the hook's; listed with -Xlog:class+load), timing the reads.
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=11
parse_runs_and_compare "$@"
prepare_apps
CONFIG=$PWD/config/llm-provider.yml
# The hidden classes a OneClient run reads (the launcher's own are not in the pack), a path a line.
"$JDK17/bin/java" -Xlog:class+load -javaagent:"$AGENT=$CONFIG" -cp "$work/apps" OneClient 2>/dev/null |
  awk '/source: file:.*retry-agent/ && !/dev.retryagent.launcher/ {print $2}' | tr . / > "$work/oneclient-classes"

for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  j="$home/bin/java -cp $work/apps ColdCost"
  add "JDK $jdk, new BigDecimal(\"1.5\").doubleValue()" "$j bigdecimal"
  add "JDK $jdk, Double.parseDouble(\"1.5\")" "$j parsedouble"
  add "JDK $jdk, Files.newInputStream, read llm-provider.yml" "$j nio-read $CONFIG"
  add "JDK $jdk, FileInputStream, read llm-provider.yml" "$j fis-read $CONFIG"
  add "JDK $jdk, open the agent jar ($(unzip -l "$AGENT" | tail -1 | awk '{print $2}') entries)" "$j zip-open $AGENT"
  if [ -n "$compare" ]; then
    add "JDK $jdk, open the compared jar ($(unzip -l "$compare" | tail -1 | awk '{print $2}') entries)" "$j zip-open $compare"
  fi
  add "JDK $jdk, open a one-class jar" "$j zip-open $work/noop-agent.jar"
  reads="read the $(wc -l < "$work/oneclient-classes") classes a OneClient run reads"
  add "JDK $jdk, $reads from the agent jar" "$home/bin/java -cp $work/apps:$AGENT ColdCost pack-read $AGENT $work/oneclient-classes"
  if [ -n "$compare" ]; then
    add "JDK $jdk, $reads from the compared jar" "$home/bin/java -cp $work/apps:$compare ColdCost pack-read $compare $work/oneclient-classes"
  fi
done

n=${#cmds[@]}
declare -a times
for ((r = 1; r <= runs; r++)); do
  for ((i = 0; i < n; i++)); do
    read -r us _ < <(bash -c "${cmds[$i]}" 2>/dev/null)
    times[$i]+="$us "
  done
  echo "round $r/$runs done" >&2
done
results_header "$runs"
echo "| first use, in a fresh JVM | median ms (wall) |"
echo "|---|---:|"
for ((i = 0; i < n; i++)); do
  printf '| %s | %.2f |\n' "${labels[$i]}" "$(echo "$(median "${times[$i]}") / 1000" | bc -l)"
done
