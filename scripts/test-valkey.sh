#!/usr/bin/env bash
# The Valkey leg (docs/testing.md#the-valkey-leg): the Redis-facing suites
# run again with Valkey in place of Redis. Every private server, Sentinel
# and Cluster node the tests start is `valkey-server`
# (IDPOOL_TEST_REDIS_SERVER, test/support/processes.ts), and the suites
# that use the shared Redis get a private Valkey on a spare port
# (IDPOOL_TEST_REDIS_URL), never the machine's Redis.
#
# The binary: IDPOOL_TEST_VALKEY_SERVER, else ../shared/bin/valkey-server
# beside the checkout (CI's fresh clone has shared/ beside it), else
# `valkey-server` on PATH. None found: one line and exit 0, or exit 1 with
# IDPOOL_REQUIRE_SERVICES=1 (CI), as a missing service is.
# Run after `. scripts/use-node24.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the issue names (48 item 1), one file each, about a minute in all:
# the function library loaded and upgraded under load (rolling-upgrade:
# the previous release rolled to this one), the functions' rate limit and
# stored answers, takes, refills and the fence, restarts with AOF and RDB,
# a Sentinel failover, a Cluster reshard and failover.
FILES=(
  test/integration/redis-functions.test.ts
  test/integration/redis-take.test.ts
  test/integration/fence.test.ts
  test/integration/redis-restart.test.ts
  test/integration/redis-sentinel.test.ts
  test/integration/redis-cluster.test.ts
  test/integration/rolling-upgrade.test.ts
  test/integration/redis-support.test.ts
)

valkey=${IDPOOL_TEST_VALKEY_SERVER:-}
if [ -z "$valkey" ] && [ -x ../shared/bin/valkey-server ]; then valkey=$(cd ../shared/bin && pwd)/valkey-server; fi
if [ -z "$valkey" ]; then valkey=$(command -v valkey-server || true); fi
if [ -z "$valkey" ] || ! "$valkey" --version >/dev/null 2>&1; then
  line="no valkey-server (IDPOOL_TEST_VALKEY_SERVER, ../shared/bin/valkey-server or PATH)"
  if [ "${IDPOOL_REQUIRE_SERVICES:-}" = 1 ]; then
    echo "!!! $line and IDPOOL_REQUIRE_SERVICES=1" >&2
    exit 1
  fi
  echo "!!! $line: SKIPPING the Valkey leg" >&2
  exit 0
fi
echo "valkey leg: $("$valkey" --version)"

port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
dir=$(mktemp -d)
"$valkey" --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no --daemonize yes \
  --pidfile "$dir/valkey.pid" --logfile "$dir/valkey.log"
stop() {
  kill "$(cat "$dir/valkey.pid")" 2>/dev/null || true
  rm -rf "$dir"
}
trap stop EXIT
for _ in $(seq 1 40); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.25
done
# The suites below prove Valkey only if it is Valkey that answers.
redis-cli -p "$port" info server | grep -q '^server_name:valkey' || {
  echo "!!! 127.0.0.1:$port does not answer as Valkey" >&2
  exit 1
}

IDPOOL_TEST_REDIS_SERVER="$valkey" IDPOOL_TEST_REDIS_URL="redis://127.0.0.1:$port/15" npx vitest run "${FILES[@]}"
