#!/usr/bin/env bash
# run_with_server.sh — runs a client program against a khz-server started on
# private ipc:// endpoints ($KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT), then
# stops the server; the program's exit status.
# Usage: run_with_server.sh KHZ-SERVER PROGRAM [ARGS...]
set -uo pipefail
server=$1
shift
tmp=$(mktemp -d /tmp/khz-run-XXXXXX)
"$server" --state-endpoint "ipc://$tmp/state" --command-endpoint "ipc://$tmp/cmd" --rt-priority 0 \
  --io-priority 0 --lock-memory false --cpu-dma-latency-us -1 --log-level warn > /dev/null &
srv=$!
for _ in $(seq 100); do [ -S "$tmp/cmd" ] && break; sleep 0.05; done
KHZ_STATE_ENDPOINT="ipc://$tmp/state" KHZ_COMMAND_ENDPOINT="ipc://$tmp/cmd" "$@"
rc=$?
kill -TERM $srv
wait $srv
rm -rf "$tmp"
exit $rc
