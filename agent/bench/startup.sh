#!/usr/bin/env bash
# Startup cost of the agent: wall time of a JVM that builds one HttpClient and exits, with and
# without -javaagent, on JDK 17 and JDK 25. Runs are interleaved (one of each variant per round)
# so that machine load drifts hit every variant alike; reports the median and the ratio to the
# run without agent on the same JDK, of the whole run and of the time until main returns (OneClient
# and Hello print the clock then). The second leaves out the JVM's exit: HotSpot waits up to 300 ms
# for threads in native code to block, and java.net.http's selector thread sits in epoll_wait; in
# some runs (with or without an agent) that adds ~300 ms to a whole run, more than any change
# measured here.
#
#   agent/bench/startup.sh [--runs N] [--compare OTHER.jar] [--url-connection] [--fleet] [--boot]
#
# --boot: the Spring Boot executable jar of test-apps/okhttp-boot-app instead (java -jar; OkHttp
# 4.12 in a nested jar, one execute() and one enqueue() to the JDK's file server on loopback, then
# System.exit), without the agent, with the built-in defaults and with config/llm-provider.yml.
# Needs test-apps/okhttp-boot-app/target/okhttp-boot-app.jar (mvn -B -ntp -pl
# test-apps/okhttp-boot-app -am package -DskipTests).
#
# --fleet: fleet mode's cost at start-up instead. OneClient without the agent, with a file that has
# no fleet section, with the same file plus a fleet section (its route scope: fleet) whose Redis
# port refuses connections (start-up must not wait for it), and with no file at all.
#
# --url-connection: the HttpURLConnection hook's cost instead. Hello (no URL), JceOnly (JCE start-up
# makes an http: URL object, so the JDK loads the handler the hook patches) and OneUrl (one GET),
# without the agent and with it, the hook switched off and on by otherwise identical files.
#
# Needs agent/target/retry-agent.jar (mvn -B -ntp -pl agent -am package -DskipTests). --compare adds
# the same retry-agent rows for another build of the jar (say, the one before a change), in the same
# rounds.
set -euo pipefail
cd "$(dirname "$0")/../.."
. agent/bench/common.sh
runs=10
compare=
urlconn=false
fleet=false
boot=false
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --compare) compare=$(readlink -f "$2"); shift 2 ;;
    --url-connection) urlconn=true; shift ;;
    --fleet) fleet=true; shift ;;
    --boot) boot=true; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

prepare_apps

if $urlconn; then
  printf 'version: 1\nagent: { clients: { url-connection: false } }\n' > "$work/off.yml"
  printf 'version: 1\nagent: { clients: { url-connection: true } }\n' > "$work/on.yml"
  for jdk in 17 25; do
    home=$JDK17; [ $jdk = 25 ] && home=$JDK25
    for app in Hello JceOnly OneUrl; do
      add "JDK $jdk, no agent, $app" "$home/bin/java -cp $work/apps $app"
      add "JDK $jdk, url-connection off, $app" "$home/bin/java -javaagent:$AGENT=$work/off.yml -cp $work/apps $app"
      add "JDK $jdk, url-connection on, $app" "$home/bin/java -javaagent:$AGENT=$work/on.yml -cp $work/apps $app"
      if [ -n "$compare" ]; then
        add "JDK $jdk, compare, url-connection on, $app" "$home/bin/java -javaagent:$compare=$work/on.yml -cp $work/apps $app"
      fi
    done
  done
fi
if $fleet; then
  route='routes:\n  - name: llm\n    match: { hosts: [api.example.com] }\n    rateLimit: { enabled: true, scope: %s, perSecond: 10, burst: 5 }\n'
  printf "version: 1\n$route" host > "$work/no-fleet.yml"
  printf "version: 1\nfleet: { redis: { url: 'redis://:secret@127.0.0.1:1' } }\n$route" fleet > "$work/fleet.yml"
  for jdk in 17 25; do
    home=$JDK17; [ $jdk = 25 ] && home=$JDK25
    add "JDK $jdk, no agent" "$home/bin/java -cp $work/apps OneClient"
    add "JDK $jdk, retry-agent, no file" "$home/bin/java -javaagent:$AGENT -cp $work/apps OneClient"
    add "JDK $jdk, retry-agent, file without fleet section" "$home/bin/java -javaagent:$AGENT=$work/no-fleet.yml -cp $work/apps OneClient"
    add "JDK $jdk, retry-agent, same file with fleet section" "$home/bin/java -javaagent:$AGENT=$work/fleet.yml -cp $work/apps OneClient"
  done
fi
if $boot; then
  BOOT=$PWD/test-apps/okhttp-boot-app/target/okhttp-boot-app.jar
  [ -f "$BOOT" ] || { echo "build it first: $BOOT is missing" >&2; exit 1; }
  start_boot_server
  for jdk in 17 25; do
    home=$JDK17; [ $jdk = 25 ] && home=$JDK25
    b="-jar $BOOT $boot_url"
    add "JDK $jdk, no agent, boot" "$home/bin/java $b"
    add "JDK $jdk, retry-agent, boot" "$home/bin/java -javaagent:$AGENT $b"
    add "JDK $jdk, retry-agent, config/llm-provider.yml, boot" "$home/bin/java -javaagent:$AGENT=$PWD/config/llm-provider.yml $b"
    if [ -n "$compare" ]; then
      add "JDK $jdk, compare, boot" "$home/bin/java -javaagent:$compare $b"
    fi
  done
fi
for jdk in 17 25; do
  ($urlconn || $fleet || $boot) && break
  home=$JDK17; [ $jdk = 25 ] && home=$JDK25
  j="$home/bin/java -cp $work/apps"
  add "JDK $jdk, no agent" "$j OneClient"
  add "JDK $jdk, empty agent (JVM's own -javaagent cost)" "$home/bin/java -javaagent:$work/noop-agent.jar -cp $work/apps OneClient"
  add "JDK $jdk, retry-agent" "$home/bin/java -javaagent:$AGENT -cp $work/apps OneClient"
  add "JDK $jdk, retry-agent, config/llm-provider.yml" "$home/bin/java -javaagent:$AGENT=$PWD/config/llm-provider.yml -cp $work/apps OneClient"
  add "JDK $jdk, no agent, Hello" "$j Hello"
  add "JDK $jdk, empty agent, Hello" "$home/bin/java -javaagent:$work/noop-agent.jar -cp $work/apps Hello"
  add "JDK $jdk, retry-agent, Hello" "$home/bin/java -javaagent:$AGENT -cp $work/apps Hello"
  if [ -n "$compare" ]; then
    add "JDK $jdk, compare" "$home/bin/java -javaagent:$compare -cp $work/apps OneClient"
    add "JDK $jdk, compare, config/llm-provider.yml" "$home/bin/java -javaagent:$compare=$PWD/config/llm-provider.yml -cp $work/apps OneClient"
    add "JDK $jdk, compare, Hello" "$home/bin/java -javaagent:$compare -cp $work/apps Hello"
  fi
done

n=${#cmds[@]}
declare -a wall cpu tomain
TIMEFORMAT='%R %U %S'
for ((i = 0; i < n; i++)); do bash -c "${cmds[$i]}" >/dev/null 2>&1; done # warm the file cache
for ((r = 1; r <= runs; r++)); do
  for ((i = 0; i < n; i++)); do
    start=$(date +%s%3N)
    t=$({ time bash -c "${cmds[$i]}" >"$work/out" 2>&1; } 2>&1)
    read -r real user sys <<<"$t"
    wall[$i]+="$(echo "$real * 1000 / 1" | bc) "
    cpu[$i]+="$(echo "($user + $sys) * 1000 / 1" | bc) "
    # OneClient and Hello print the wall clock as main returns: the start-up without the exit
    end=$(sed -n 's/^main-end \([0-9]*\)$/\1/p' "$work/out")
    [ -n "$end" ] && tomain[$i]+="$((end - start)) "
  done
  echo "round $r/$runs done" >&2
done

results_header "$runs"
echo "| variant | median wall ms | ratio | median CPU ms (user+sys) | median ms until main returns | ratio |"
echo "|---|---:|---:|---:|---:|---:|"
declare -A base basemain
for ((i = 0; i < n; i++)); do
  w=$(median "${wall[$i]}"); c=$(median "${cpu[$i]}")
  key=${labels[$i]%%,*}; [[ ${labels[$i]} == *Hello ]] && key="$key Hello"
  $urlconn && key="${labels[$i]%%,*} ${labels[$i]##*, }"
  m=-; mratio=-
  [ -n "${tomain[$i]:-}" ] && m=$(median "${tomain[$i]}")
  if [[ ${labels[$i]} == *"no agent"* ]]; then base[$key]=$w; basemain[$key]=$m; fi
  ratio=$(echo "scale=2; $w / ${base[$key]}" | bc)
  [ "$m" != - ] && [ "${basemain[$key]:--}" != - ] && mratio=$(echo "scale=2; $m / ${basemain[$key]}" | bc)
  printf '| %s | %s | %s | %s | %s | %s |\n' "${labels[$i]}" "$w" "$ratio" "$c" "$m" "$mratio"
done
