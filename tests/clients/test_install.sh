#!/usr/bin/env bash
# test_install.sh — `meson install` into a temporary DESTDIR, then a
# controller built the way the README says,
#     cc ctl.c $(pkg-config --cflags --libs khz-client)
# against the installed headers, library and pkg-config file (found through
# PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR, as for any staged install), run
# against a real khz-server; then the installed Python package and `khz`
# command, away from the build tree.
# Usage: test_install.sh BUILD_ROOT SOURCE_ROOT KHZ-SERVER [SANITIZE]
set -euo pipefail
build=$1 src=$2 server=$3 sanitize=${4:-none}
tmp=$(mktemp -d /tmp/khz-install-XXXXXX)
srv=
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

# the install: everything the project installs, under $tmp/root
meson install -C "$build" --no-rebuild --destdir "$tmp/root" --quiet
pc=$(find "$tmp/root" -name khz-client.pc | head -1)
lib=$(find "$tmp/root" -name 'libkhz-client.so' | head -1)
[ -n "$pc" ] && [ -n "$lib" ] && [ -f "$(find "$tmp/root" -path '*include/khz/client.h' | head -1)" ] \
  && [ -f "$(find "$tmp/root" -path '*include/khz_msgs/v1/state.pb-c.h' | head -1)" ] \
  && ok "installed: $(basename "$pc"), $(basename "$lib"), khz/client.h, khz_msgs/v1/*.pb-c.h" \
  || bad "installed files missing"
cat "$pc"

# the README's line, outside the source tree
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cp "$src/clients/examples/example.c" "$tmp/ctl.c"
flags=()
[ "$sanitize" != none ] && flags=("-fsanitize=$sanitize")
(cd "$tmp" && cc "${flags[@]}" ctl.c $(pkg-config --cflags --libs khz-client) -o ctl) \
  && ok "cc ctl.c \$(pkg-config --cflags --libs khz-client)" || bad "compiling against the install"

# ... and it controls a real server
"$server" --state-endpoint "ipc://$tmp/state" --command-endpoint "ipc://$tmp/cmd" --rt-priority 0 \
  --io-priority 0 --lock-memory false --cpu-dma-latency-us -1 --log-level warn > /dev/null &
srv=$!
for _ in $(seq 100); do [ -S "$tmp/cmd" ] && break; sleep 0.05; done
export KHZ_STATE_ENDPOINT="ipc://$tmp/state" KHZ_COMMAND_ENDPOINT="ipc://$tmp/cmd"
out=$(LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/ctl" 2>&1) && [[ $out == *"rad, target"* ]] \
  && ok "the installed controller: $out" || bad "the installed controller: $out"
deps=$(LD_LIBRARY_PATH=$(dirname "$lib") ldd "$tmp/ctl")
[[ $deps == *"$tmp/root"*libkhz-client* ]] \
  && ok "linked to the installed libkhz-client" || bad "not linked to the installed library: $deps"

# the installed Python package and command, away from the build tree
khz=$(find "$tmp/root" -path '*/bin/khz' | head -1)
out=$(cd "$tmp" && env -u PYTHONPATH "$khz" model 2>&1) && [[ $out == *"arm/joint1"* ]] \
  && ok "installed khz command: khz model" || bad "installed khz: $out"
py=$(head -1 "$khz" | cut -c3-)
pkg=$(dirname "$(dirname "$(find "$tmp/root" -path '*/khz_msgs/v1/state_pb2.py' | head -1)")")
out=$(cd "$tmp" && env -u PYTHONPATH PYTHONPATH="$(dirname "$pkg")" "$py" -c \
  'import khz; c = khz.Client(); print(c.model.na, khz.__file__)' 2>&1) \
  && [[ $out == "7 $tmp/root"* ]] && ok "installed Python package: $out" || bad "import khz: $out"

kill -TERM "$srv"; wait "$srv" || bad "khz-server exit status"
srv=
echo "$fails failed"
exit $((fails > 0))
