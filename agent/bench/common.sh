# Shared by the start-up scripts in this directory: sourced from the repository root, never run.

# The JDKs and the agent under test; each can be set from the environment.
JDK17=${JDK17:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}
JDK25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
AGENT=${AGENT:-$PWD/agent/target/retry-agent.jar}

# The median of the space-separated numbers in $1.
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# The one line that says when and on what a table was measured: date, cores, load, and the number
# of interleaved rounds when $1 gives one. Timings on a loaded machine say little without it.
run_header() { echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)${1:+, $1 interleaved runs each}"; }

# The variants a script runs, in order: `add LABEL COMMAND` appends one to labels and cmds.
labels=(); cmds=()
add() { labels+=("$1"); cmds+=("$2"); }

# What goes above a results table: run_header's line ($1: the rounds), which jars were compared
# when --compare gave one, and a blank line.
results_header() {
  run_header "$1"
  if [ -n "${compare:-}" ]; then
    echo "retry-agent: $AGENT; compare: $compare"
  fi
  echo
}

# Compiles agent/bench/apps into $work/apps, a Premain-Class that does nothing into
# $work/noop-agent.jar (what any -javaagent costs the JVM) and TransformerCostAgent into
# $work/transformer-agent.jar (what a class-load hook costs), in a temporary $work removed on exit.
# Stops when the agent under test has not been built.
prepare_apps() {
  [ -f "$AGENT" ] || { echo "build the agent first: $AGENT is missing" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$JDK17/bin/javac" -nowarn --release 11 -d "$work/apps" agent/bench/apps/*.java
  printf 'Premain-Class: NoOpAgent\n' > "$work/noop.mf"
  (cd "$work/apps" && "$JDK17/bin/jar" cfm ../noop-agent.jar ../noop.mf NoOpAgent.class)
  printf 'Premain-Class: TransformerCostAgent\nCan-Retransform-Classes: true\n' > "$work/tc.mf"
  (cd "$work/apps" && "$JDK17/bin/jar" cfm ../transformer-agent.jar ../tc.mf TransformerCostAgent*.class)
}

# The options of the scripts that take only --runs N and --compare OTHER.jar: sets $runs (the
# caller's default stays when absent) and $compare (empty when absent).
parse_runs_and_compare() {
  compare=
  while [ $# -gt 0 ]; do
    case "$1" in
      --runs) runs=$2; shift 2 ;;
      --compare) compare=$(readlink -f "$2"); shift 2 ;;
      *) echo "unknown option $1" >&2; exit 2 ;;
    esac
  done
}

# The Spring Boot test app's loopback server (its two GETs, /sync and /async): the JDK's own file
# server over $work/www, stopped on exit with $work removed. Sets $boot_url. Needs $work.
start_boot_server() {
  mkdir -p "$work/www" && echo sync > "$work/www/sync" && echo async > "$work/www/async"
  local port=$((20000 + RANDOM % 20000))
  "$JDK25/bin/jwebserver" -b 127.0.0.1 -p "$port" -d "$work/www" -o none >/dev/null 2>&1 &
  boot_server=$!
  trap 'kill "$boot_server" 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  boot_url=http://127.0.0.1:$port
}
