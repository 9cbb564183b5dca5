# Sourced by the load scripts: servers started on loopback ports, each
# waited for until it listens, and all stopped when the script exits.
#
#   start NAME PORT LOG COMMAND...   runs COMMAND in the background, its
#                                    output in LOG; returns once PORT listens;
#                                    stops the script if it exits or 30 s pass
#   free_port                        an unused loopback port
#   started_pid                      the pid of the last server started
#   cpu_ticks PID                    the CPU time of PID and its live
#                                    children, in clock ticks

pids=()
stop_servers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_servers EXIT INT TERM

die() { echo "error: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started_pid() { echo "${pids[-1]}"; }
start() { # name port log command...
  local name=$1 port=$2 log=$3
  shift 3
  "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 300); do
    listening "$port" && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || die "$name exited during start-up: $(tail -3 "$log")"
    sleep 0.1
  done
  die "$name did not listen on 127.0.0.1:$port within 30 s"
}

cpu_ticks() { # pid
  local total=0 p ut st
  for p in $1 $(pgrep -P "$1" || true); do
    [ -r "/proc/$p/stat" ] || continue
    # Fields after the command name (which may hold spaces): utime is the
    # 12th, stime the 13th.
    read -r ut st < <(sed 's/^.*) //' "/proc/$p/stat" | awk '{print $12, $13}')
    total=$((total + ut + st))
  done
  echo "$total"
}
