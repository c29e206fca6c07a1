#!/usr/bin/env bash
# CPU time until the application's main, with and without the agent: what -javaagent, premain and
# the configuration file cost before the application runs. agent/bench/apps/CpuAtMain reads the
# main thread's and all threads' time on a CPU from /proc (Linux), so a loaded machine inflates it
# far less than wall time or the process's user+sys. Interleaved rounds; medians.
#
#   agent/bench/premain-cpu.sh [--runs N] [--compare OTHER.jar] [--client] [--hooks]
#
# --client: a third column, the main thread's CPU time in the application's first
# HttpClient.newHttpClient() (the JDK's HttpClientFacade is loaded, and rewritten by the agent, there).
# --hooks: more agents that do no work of their own (TransformerCostAgent): one that keeps a
# class-load transformer changing nothing, as any agent hooking classes as they load does; one that
# keeps four, each with a name test (retry-agent's shape: one per client); one whose lasting
# transformer cannot retransform (the JVM's other JVMTI environment); and one that rewrites one
# loaded JDK class and keeps no transformer. Use with --client: the hook's cost
# falls on every class the JDK loads in the first newHttpClient().
#
# Needs agent/target/retry-agent.jar (mvn -B -ntp -pl core,fleet,agent package -DskipTests).
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=21
client=
hooks=
args=()
for a in "$@"; do
  case "$a" in
    --client) client=client ;;
    --hooks) hooks=yes ;;
    *) args+=("$a") ;;
  esac
done
parse_runs_and_compare "${args[@]}"
CONFIG=$PWD/config/llm-provider.yml
prepare_apps

for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  j="$home/bin/java -cp $work/apps"
  add "JDK $jdk, no agent" "$j CpuAtMain $client"
  add "JDK $jdk, empty agent" "$home/bin/java -javaagent:$work/noop-agent.jar -cp $work/apps CpuAtMain $client"
  if [ -n "$hooks" ]; then
    add "JDK $jdk, empty agent + a lasting no-op transformer" "$home/bin/java -javaagent:$work/transformer-agent.jar=lasting -cp $work/apps CpuAtMain $client"
    add "JDK $jdk, empty agent + four lasting transformers with name tests" "$home/bin/java -javaagent:$work/transformer-agent.jar=four -cp $work/apps CpuAtMain $client"
    add "JDK $jdk, empty agent + a lasting no-op transformer, not retransform-capable" "$home/bin/java -javaagent:$work/transformer-agent.jar=plain -cp $work/apps CpuAtMain $client"
    add "JDK $jdk, empty agent + one class rewritten, no lasting transformer" "$home/bin/java -javaagent:$work/transformer-agent.jar=one -cp $work/apps CpuAtMain $client"
  fi
  add "JDK $jdk, retry-agent, built-in defaults" "$home/bin/java -javaagent:$AGENT -cp $work/apps CpuAtMain $client"
  add "JDK $jdk, retry-agent, config/llm-provider.yml" "$home/bin/java -javaagent:$AGENT=$CONFIG -cp $work/apps CpuAtMain $client"
  if [ -n "$compare" ]; then
    add "JDK $jdk, compare, built-in defaults" "$home/bin/java -javaagent:$compare -cp $work/apps CpuAtMain $client"
    add "JDK $jdk, compare, config/llm-provider.yml" "$home/bin/java -javaagent:$compare=$CONFIG -cp $work/apps CpuAtMain $client"
  fi
done

n=${#cmds[@]}
declare -a mainT allT clientT
for ((r = 1; r <= runs; r++)); do
  for ((i = 0; i < n; i++)); do
    read -r m a c < <(bash -c "${cmds[$i]}" 2>/dev/null)
    mainT[$i]+="$m "; allT[$i]+="$a "; clientT[$i]+="${c:-0} "
  done
  echo "round $r/$runs done" >&2
done
results_header "$runs"
if [ -n "$client" ]; then
  echo "| variant | main thread, CPU ms until main | all threads, CPU ms until main | main thread, CPU ms in the first HttpClient.newHttpClient() |"
  echo "|---|---:|---:|---:|"
else
  echo "| variant | main thread, CPU ms until main | all threads, CPU ms until main |"
  echo "|---|---:|---:|"
fi
for ((i = 0; i < n; i++)); do
  row=$(printf '| %s | %.1f | %.1f |' "${labels[$i]}" "$(echo "$(median "${mainT[$i]}") / 1000" | bc -l)" "$(echo "$(median "${allT[$i]}") / 1000" | bc -l)")
  [ -n "$client" ] && row+=$(printf ' %.1f |' "$(echo "$(median "${clientT[$i]}") / 1000" | bc -l)")
  echo "$row"
done
