#!/usr/bin/env bash
# Three windows of OneClient's start-up, timed by the JVM's own class-load log (-Xlog:class+load,
# nanosecond stamps), without the agent and with it, on JDK 17 and 25, with config/llm-provider.yml;
# interleaved rounds, median (min-max):
# - premain: from the agent's launcher class (dev.retryagent.launcher.RetryAgent) loaded to the
#   application's main class loaded;
# - the hooks' install in premain: from the agent's JdkHttpInstallation to its exit hook loaded
#   (AgentRuntime$ExitHook, AgentRuntime$2 in jars before it had a name: the four transformers
#   added, the classes already loaded looked at);
# - the JDK's HttpClientFacade loaded when the application builds its first HttpClient: from
#   jdk.internal.net.http.HttpClientBuilderImpl to the facade, which the agent rewrites.
#
#   agent/bench/load-windows.sh [--runs N] [--compare OTHER.jar]
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=15
parse_runs_and_compare "$@"
prepare_apps
CONFIG=$PWD/config/llm-provider.yml

for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  add "JDK $jdk, no agent" "$home/bin/java -Xlog:class+load:stdout:uptimenanos -cp $work/apps OneClient"
  add "JDK $jdk, retry-agent" "$home/bin/java -Xlog:class+load:stdout:uptimenanos -javaagent:$AGENT=$CONFIG -cp $work/apps OneClient"
  if [ -n "$compare" ]; then
    add "JDK $jdk, compare" "$home/bin/java -Xlog:class+load:stdout:uptimenanos -javaagent:$compare=$CONFIG -cp $work/apps OneClient"
  fi
done

n=${#cmds[@]}
declare -a window installs premains classes
for ((r = 1; r <= runs; r++)); do
  for ((i = 0; i < n; i++)); do
    bash -c "${cmds[$i]}" >"$work/log" 2>/dev/null
    window[$i]+="$(awk '/HttpClientBuilderImpl source/ {gsub(/[][ns]/, "", $1); a = $1}
      /HttpClientFacade source/ {gsub(/[][ns]/, "", $1); b = $1} END {printf "%.1f", (b - a) / 1e6}' "$work/log") "
    installs[$i]+="$(awk '/JdkHttpInstallation source/ {gsub(/[][ns]/, "", $1); a = $1}
      /AgentRuntime\$(2|ExitHook) source/ {gsub(/[][ns]/, "", $1); b = $1} END {printf "%.1f", a ? (b - a) / 1e6 : 0}' "$work/log") "
    premains[$i]+="$(awk '/launcher.RetryAgent source/ {gsub(/[][ns]/, "", $1); a = $1}
      / OneClient source/ {gsub(/[][ns]/, "", $1); b = $1} END {printf "%.1f", a ? (b - a) / 1e6 : 0}' "$work/log") "
    classes[$i]+="$(grep -c 'source:' "$work/log") "
  done
  echo "round $r/$runs done" >&2
done
results_header "$runs"
# median (min-max) of the numbers in $1
spread() {
  local sorted
  sorted=$(tr ' ' '\n' <<<"$1" | grep . | sort -n)
  echo "$(median "$1") ($(head -1 <<<"$sorted")-$(tail -1 <<<"$sorted"))"
}
echo "| variant | ms in premain | ms installing the hooks in premain | ms from HttpClientBuilderImpl to HttpClientFacade loaded | classes loaded in all, median |"
echo "|---|---:|---:|---:|---:|"
for ((i = 0; i < n; i++)); do
  printf '| %s | %s | %s | %s | %s |\n' "${labels[$i]}" "$(spread "${premains[$i]}")" \
    "$(spread "${installs[$i]}")" "$(spread "${window[$i]}")" "$(median "${classes[$i]}")"
done
