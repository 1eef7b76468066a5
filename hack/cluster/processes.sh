# shellcheck shell=bash
# Sourced by hack/cluster/cluster.sh (after settings.sh); not run on its own.
#
# Processes started by this cluster: each runs in its own session with its
# log in .work/cluster/logs and its pid in .work/cluster/pids/<name>, so
# that `down` stops exactly what `up` started (by pid, never by name).

# put writes stdin to a file only when the content differs: kube-proxy exits
# when its configuration file changes under it.
put() {
  local tmp
  tmp=$(mktemp "$1.XXXX")
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; fi
}

# alive: the process exists and is not a zombie. Processes started here are
# re-parented to this sandbox's pid 1, which may never reap them, so an exited
# one can stay a zombie that `kill -0` still finds.
alive() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }

running() { local p; p=$(cat "$pids/$1" 2>/dev/null) && alive "$p"; }

start() { # name cmd...
  local name=$1; shift
  if running "$name"; then return 0; fi
  mkdir -p "$pids" "$logs"
  setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$pids/$name"
}

wait_for() { # what seconds cmd...
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "timed out after ${secs}s waiting for $what (logs: $logs)"
    sleep 0.5
  done
}

stop_pids() { # name... : SIGTERM to all at once, SIGKILL after 10 s
  local n p live=()
  for n in "$@"; do
    p=$(cat "$pids/$n" 2>/dev/null) || continue
    alive "$p" && kill "$p" 2>/dev/null && live+=("$p")
  done
  for _ in $(seq 1 40); do
    local still=()
    for p in "${live[@]}"; do alive "$p" && still+=("$p"); done
    live=("${still[@]}")
    [ ${#live[@]} -eq 0 ] && break
    sleep 0.25
  done
  for p in "${live[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in "$@"; do rm -f "$pids/$n"; done
}
