#!/usr/bin/env bash
# The main thread's CPU time in retry-agent's premain alone, timed by an agent before and after it
# (agent/bench/apps/PremainTimer): exact to the microsecond and without the JVM's own start-up, so a
# change of a few hundred microseconds in premain shows, which premain-cpu.sh's figure until main
# (spread of several ms) hides. Hello as the application; interleaved rounds (the order reversed every
# other round), medians and quartiles; with --compare, the median of the per-round differences.
#
#   agent/bench/premain-self.sh [--runs N] [--compare OTHER.jar]
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=41
parse_runs_and_compare "$@"
prepare_apps
CONFIG=$PWD/config/llm-provider.yml
printf 'Premain-Class: PremainTimer\n' > "$work/timer.mf"
(cd "$work/apps" && "$JDK17/bin/jar" cfm ../timer.jar ../timer.mf PremainTimer.class)
timed() { echo "$1/bin/java -javaagent:$work/timer.jar=start -javaagent:$2 -javaagent:$work/timer.jar=end -cp $work/apps Hello"; }

for jdk in 17 25; do
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  for config in defaults file; do
    arg=; [ $config = file ] && arg="=$CONFIG"
    add "JDK $jdk, $config" "$(timed "$home" "$AGENT$arg")"
    if [ -n "$compare" ]; then
      add "JDK $jdk, $config, compare" "$(timed "$home" "$compare$arg")"
    fi
  done
done

n=${#cmds[@]}
declare -a us
for ((r = 1; r <= runs; r++)); do
  for ((k = 0; k < n; k++)); do
    i=$k; ((r % 2 == 0)) && i=$((n - 1 - k))
    v=$(bash -c "${cmds[$i]}" 2>/dev/null | awk '/^premain-cpu-us /{print $2}')
    us[$i]+="${v:-nan} "
  done
  echo "round $r/$runs done" >&2
done
# Median and quartiles of the space-separated numbers in $1, in ms.
quartiles() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {printf "%.2f (%.2f-%.2f)", a[int((NR+1)/2)]/1000, a[int(NR/4)+1]/1000, a[int(3*NR/4)+1]/1000}'; }
results_header "$runs"
if [ -n "$compare" ]; then
  echo "| variant | retry-agent, ms (p25-p75) | compare, ms (p25-p75) | per round, retry-agent minus compare, median ms (p25-p75) |"
  echo "|---|---:|---:|---:|"
  for ((i = 0; i < n; i += 2)); do
    diffs=$(paste -d' ' <(tr ' ' '\n' <<<"${us[$i]}" | grep .) <(tr ' ' '\n' <<<"${us[$((i + 1))]}" | grep .) | awk '{print $1 - $2}' | tr '\n' ' ')
    echo "| ${labels[$i]} | $(quartiles "${us[$i]}") | $(quartiles "${us[$((i + 1))]}") | $(tr ' ' '\n' <<<"$diffs" | grep . | sort -n | awk '{a[NR]=$1} END {printf "%+.2f (%+.2f to %+.2f)", a[int((NR+1)/2)]/1000, a[int(NR/4)+1]/1000, a[int(3*NR/4)+1]/1000}') |"
  done
else
  echo "| variant | main thread, CPU ms in premain (p25-p75) |"
  echo "|---|---:|"
  for ((i = 0; i < n; i++)); do
    echo "| ${labels[$i]} | $(quartiles "${us[$i]}") |"
  done
fi
