#!/usr/bin/env bash
# The main job on a fresh Debian machine: install what is missing, build, then
# start khz-server on the embedded default scene (a 7-DoF arm on a table next
# to loose objects) together with the demo controller (khz-demo), which closes
# a PID loop on the arm through the wire and prints live statistics once a
# second. After KHZ_SECONDS (default 10) both stop cleanly and the server
# prints its final statistics.
#   KHZ_SECONDS=30 ./scripts/run.sh
#   KHZ_STATE_ENDPOINT / KHZ_COMMAND_ENDPOINT override the endpoints
#   (default tcp://127.0.0.1:5600 and :5601).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/build.sh build

seconds=${KHZ_SECONDS:-10}
state_ep=${KHZ_STATE_ENDPOINT:-tcp://127.0.0.1:5600}
command_ep=${KHZ_COMMAND_ENDPOINT:-tcp://127.0.0.1:5601}

./build/tools/khz-sim info default

# the server in the background; it stops on SIGINT (or after a safety margin)
./build/server/khz-server --scene default --state-endpoint "$state_ep" \
  --command-endpoint "$command_ep" --duration-s $((seconds + 30)) &
server=$!
trap 'kill -INT $server 2>/dev/null || true' EXIT

# the controller: connects, describes the model, answers every state
./build/server/khz-demo --state "$state_ep" --command "$command_ep" --seconds "$seconds"

# clean stop: SIGINT, final statistics, exit status 0
kill -INT $server
trap - EXIT
wait $server
