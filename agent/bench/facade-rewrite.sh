#!/usr/bin/env bash
# How long the JDK's HttpClientFacade takes to load when OneClient builds its first HttpClient: the
# wall time between the JVM loading jdk.internal.net.http.HttpClientBuilderImpl and loading the
# facade (-Xlog:class+load, millisecond stamps), without the agent and with it, where it is the
# agent's rewrite of the facade. On JDK 17 and 25, with config/llm-provider.yml; interleaved
# rounds, median (min-max).
#
#   agent/bench/facade-rewrite.sh [--runs N] [--compare OTHER.jar]
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=15
parse_runs_and_compare "$@"
prepare_apps
CONFIG=$PWD/config/llm-provider.yml

labels=(); cmds=()
add() { labels+=("$1"); cmds+=("$2"); }
for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  add "JDK $jdk, no agent" "$home/bin/java -Xlog:class+load -cp $work/apps OneClient"
  add "JDK $jdk, retry-agent" "$home/bin/java -Xlog:class+load -javaagent:$AGENT=$CONFIG -cp $work/apps OneClient"
  if [ -n "$compare" ]; then
    add "JDK $jdk, compare" "$home/bin/java -Xlog:class+load -javaagent:$compare=$CONFIG -cp $work/apps OneClient"
  fi
done

n=${#cmds[@]}
declare -a window classes
for ((r = 1; r <= runs; r++)); do
  for ((i = 0; i < n; i++)); do
    bash -c "${cmds[$i]}" >"$work/log" 2>/dev/null
    window[$i]+="$(awk '/HttpClientBuilderImpl source/ {gsub(/[][s]/, "", $1); a = $1}
      /HttpClientFacade source/ {gsub(/[][s]/, "", $1); b = $1} END {printf "%d", (b - a) * 1000}' "$work/log") "
    classes[$i]+="$(grep -c 'source:' "$work/log") "
  done
  echo "round $r/$runs done" >&2
done
run_header "$runs"
[ -n "$compare" ] && echo "retry-agent: $AGENT; compare: $compare"
echo
echo "| variant | ms from HttpClientBuilderImpl to HttpClientFacade loaded, median (min-max) | classes loaded in all, median |"
echo "|---|---:|---:|"
for ((i = 0; i < n; i++)); do
  sorted=$(tr ' ' '\n' <<<"${window[$i]}" | grep . | sort -n)
  printf '| %s | %s (%s-%s) | %s |\n' "${labels[$i]}" "$(median "${window[$i]}")" \
    "$(head -1 <<<"$sorted")" "$(tail -1 <<<"$sorted")" "$(median "${classes[$i]}")"
done
