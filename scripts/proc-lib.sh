# shellcheck shell=bash
# Shared by scripts/bench.sh and scripts/scale.sh (sourced, not run):
# stopping the processes they started, every wait bounded. Both scripts
# define log() before calling these.

# wait_gone PID SECONDS: wait for PID to exit, at most SECONDS (bounded:
# polling instead of a bare `wait`, which could block forever). A zombie
# (a process that is not our child, started by a tool of ours, and has
# exited) counts as gone.
wait_gone() {
	local pid=$1 limit=$(($2 * 10)) i
	for ((i = 0; i < limit; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		[[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] || return 0
		sleep 0.1
	done
	return 1
}

# stop_pid PID [GRACE]: SIGTERM, up to GRACE (default 10) seconds, then
# SIGKILL; then reap it if it is our child.
stop_pid() {
	local pid=$1 grace=${2:-10}
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || {
		wait "$pid" 2>/dev/null || true
		return 0
	}
	if ! wait_gone "$pid" "$grace"; then
		log "pid $pid ignored SIGTERM for ${grace}s, killing"
		kill -KILL "$pid" 2>/dev/null || true
		wait_gone "$pid" 5 || true
	fi
	wait "$pid" 2>/dev/null || true
}
