#!/usr/bin/env bash
# The core library, through `sandboxctl`, against the Worker under `wrangler dev` (issue 6).
#
# Starts a real local engine (sandboxd) on an ephemeral loopback port with a temporary data dir,
# then `wrangler dev -e dev` on a free loopback port with ENGINE_URL/ENGINE_KEY pointing at it and
# a fresh API key, waits for /health, and drives the Worker with build/bin/sandboxctl: health, a
# refused key, session, create, list, exec (live output, stdout/stderr, exit codes), file round
# trips (text and binary), ls, delete. It also asks the engine directly whether the sandbox is
# there, so a pass means the Worker really routed the work to it.
#
# Every process it starts runs in its own process group and is ended on exit, failure or
# interrupt; every wait is bounded, and a watchdog ends the run after E2E_TIMEOUT seconds.
#
# Needs: npm ci in worker/ (for wrangler), curl, node, and the built binaries:
#   SANDBOXD_BIN   (default: ../build/bin/sandboxd)
#   SANDBOXCTL_BIN (default: ../build/bin/sandboxctl)
# SANDBOX_E2E_KEEP=1 keeps the temporary directory (logs, engine and wrangler state).
set -euo pipefail

worker=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
root=$(cd "$worker/.." && pwd)
sandboxd=${SANDBOXD_BIN:-$root/build/bin/sandboxd}
sandboxctl=${SANDBOXCTL_BIN:-$root/build/bin/sandboxctl}
wrangler=$worker/node_modules/.bin/wrangler
total_timeout=${E2E_TIMEOUT:-300}

say() { printf 'e2e: %s\n' "$*"; }
checks=0
pass() { checks=$((checks + 1)); printf 'ok %d - %s\n' "$checks" "$*"; }

for f in "$sandboxd" "$sandboxctl"; do
  [ -x "$f" ] || { say "missing $f: build it first (ninja -C build sandboxd sandboxctl)"; exit 1; }
done
[ -x "$wrangler" ] || { say "missing $wrangler: run npm ci in worker/ first"; exit 1; }
for c in curl node setsid timeout; do
  command -v "$c" >/dev/null || { say "missing the command $c"; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sandbox-e2e.XXXXXX")
# Sandboxes run as other uids (when sandboxd runs as root) and must pass through to their
# workspaces under the engine's data dir, as under sandboxd's own 0711 data dir.
chmod 0711 "$tmp"
pids=()
watchdog=""

# Ends a process group started with setsid: TERM, up to 5 s to go, then KILL.
stop_group() {
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  # No errexit here: a failing step of the clean-up must not skip the rest of it.
  set +e
  trap - EXIT INT TERM
  [ -n "$watchdog" ] && stop_group "$watchdog"
  # The Worker first (it holds connections to the engine), then the engine.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_group "${pids[i]}"; done
  if [ "$rc" -ne 0 ]; then
    for log in "$tmp"/wrangler.log "$tmp"/sandboxd.err; do
      [ -s "$log" ] && { say "--- last lines of $(basename "$log")"; tail -n 30 "$log" | sed 's/^/    /'; }
    done
    say "FAILED after $checks checks"
  fi
  if [ "${SANDBOX_E2E_KEEP:-}" = 1 ]; then
    say "kept $tmp"
  else
    # An engine that had to be killed leaves its workspaces mounted: rm -rf would stop at them
    # ("Device or resource busy") and leave the mounts behind. Deepest first, detached.
    awk -v dir="$tmp/" 'index($2, dir) == 1 { print $2 }' /proc/self/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null; done
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT
trap 'say "terminated (the watchdog ends the run after ${total_timeout}s)"; exit 124' TERM

fail() {
  say "FAIL: $*"
  exit 1
}

# Bounds the whole run: the watchdog signals this shell, whose trap cleans up. Its own process
# group and no inherited stdout, so that ending it leaves nothing behind holding a pipe open.
setsid bash -c "sleep $total_timeout; kill -TERM $$" </dev/null >/dev/null 2>&1 &
watchdog=$!

free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# --- the engine ---------------------------------------------------------------------------------
mkdir -p "$tmp/engine"
setsid "$sandboxd" --listen 127.0.0.1:0 --data-dir "$tmp/engine" >"$tmp/sandboxd.out" 2>"$tmp/sandboxd.err" &
pids+=($!)
engine_url=""
for _ in $(seq 300); do
  engine_url=$(sed -n 's/.*sandboxd listening on \(http:\/\/[^ ]*\).*/\1/p' "$tmp/sandboxd.out" | head -n 1)
  [ -n "$engine_url" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || fail "sandboxd exited at start"
  sleep 0.1
done
[ -n "$engine_url" ] || fail "sandboxd did not report listening within 30 s"
engine_key=$(cat "$tmp/engine/api-key")
say "engine at $engine_url"

# What the engine itself holds for its key (the Worker's sandboxes live there).
engine_agents() {
  curl -fsS --max-time 10 -H "Authorization: Bearer $engine_key" "$engine_url/api/agents"
}

# --- the Worker under wrangler dev --------------------------------------------------------------
port=$(free_port)
inspector_port=$(free_port)
key="sk_e2e_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
base="http://127.0.0.1:$port"
(
  cd "$worker"
  export XDG_CONFIG_HOME="$tmp/wrangler-config" WRANGLER_LOG_PATH="$tmp/wrangler-logs" WRANGLER_SEND_METRICS=false
  exec setsid "$wrangler" dev -e dev --ip 127.0.0.1 --port "$port" --inspector-port "$inspector_port" \
    --persist-to "$tmp/wrangler-state" --show-interactive-dev-session=false --log-level warn \
    --var "API_KEYS:$key" --var "ENGINE_URL:$engine_url" --var "ENGINE_KEY:$engine_key"
) </dev/null >"$tmp/wrangler.log" 2>&1 &
pids+=($!)
health=""
for _ in $(seq 180); do
  health=$(curl -fsS --max-time 2 "$base/health" 2>/dev/null) && break
  health=""
  kill -0 "${pids[1]}" 2>/dev/null || fail "wrangler dev exited at start"
  sleep 0.5
done
[ -n "$health" ] || fail "wrangler dev did not answer /health on $base within 90 s"
say "Worker at $base"

# --- sandboxctl against the Worker --------------------------------------------------------------
ctl() { timeout 60 "$sandboxctl" --url "$base" --key "$key" "$@"; }
# Runs ctl, keeping stdout, stderr and the exit code apart: out, err, rc.
run() {
  set +e
  ctl "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}
expect_rc() { # expected rc, what
  [ "$rc" -eq "$1" ] || fail "$2: exit $rc, expected $1; stdout: $out; stderr: $err"
}

run health
expect_rc 0 "health"
grep -q '"backend": "cloudflare"' <<<"$out" || fail "health does not come from the Worker: $out"
pass "health answers from the Worker (backend cloudflare)"

set +e
timeout 60 "$sandboxctl" --url "$base" --key "sk_e2e_wrong_0000000000000000" session >/dev/null 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "a wrong key: exit $rc, expected 3 ($(cat "$tmp/err"))"
pass "a wrong key is refused (exit 3)"

run session
expect_rc 0 "session"
grep -q '"backend": "cloudflare"' <<<"$out" || fail "session: $out"
grep -Eq '"total": 0' <<<"$out" || fail "session of a fresh key has sandboxes: $out"
pass "session over the /rpc WebSocket"

run create claude-code --size lite
expect_rc 0 "create claude-code"
id=$out
[[ "$id" =~ ^sb_[0-9a-f]+$ ]] || fail "create printed '$id', not a sandbox id"
pass "create claude-code -> $id"

[ "$(engine_agents | grep -o '"id"' | wc -l)" -eq 1 ] || fail "the engine does not hold the new sandbox: $(engine_agents)"
pass "the sandbox lives in the engine behind the Worker"

run list
expect_rc 0 "list"
grep -Eq "^$id +.*agent +claude-code +lite +running" <<<"$out" || fail "list: $out" # NAME sits between ID and KIND
pass "list shows it running"

run exec "$id" -- 'echo hi; exit 3'
expect_rc 3 "exec 'echo hi; exit 3'"
[ "$out" = hi ] || fail "exec stdout '$out', expected 'hi'"
pass "exec passes stdout and the exit code (3)"

run exec "$id" -- 'echo oops >&2; echo fine'
expect_rc 0 "exec with stderr"
[ "$out" = fine ] && [ "$err" = oops ] || fail "exec: stdout '$out', stderr '$err'"
pass "exec keeps stdout and stderr apart"

run exec "$id" -- printf '%s|' a 'b c'
expect_rc 0 "exec argv"
[ "$out" = 'a|b c|' ] || fail "exec argv: '$out'"
pass "exec with an argv keeps the arguments"

# Live output: the first line arrives while the command still runs.
ctl exec "$id" -- 'echo first; sleep 5; echo second' >"$tmp/live" 2>"$tmp/live.err" &
live=$!
seen=""
for _ in $(seq 200); do
  grep -q first "$tmp/live" && { seen=yes; break; }
  kill -0 "$live" 2>/dev/null || break
  sleep 0.1
done
[ -n "$seen" ] || fail "no live output within 20 s: $(cat "$tmp/live" "$tmp/live.err")"
kill -0 "$live" 2>/dev/null || fail "the command had ended before its first line was seen"
grep -q second "$tmp/live" && fail "the second line came before the command slept"
set +e
wait "$live"
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "live exec: exit $rc ($(cat "$tmp/live.err"))"
[ "$(cat "$tmp/live")" = "$(printf 'first\nsecond')" ] || fail "live exec output: $(cat "$tmp/live")"
pass "exec streams output live while the command runs"

printf 'hello from the host\nline two, ünïcödé\n' >"$tmp/hello.txt"
run write "$id" notes/hello.txt "$tmp/hello.txt" -p
expect_rc 0 "write"
[ "$out" = "/workspace/notes/hello.txt ($(stat -c %s "$tmp/hello.txt") bytes)" ] || fail "write: $out"
ctl read "$id" notes/hello.txt >"$tmp/hello.back"
cmp -s "$tmp/hello.txt" "$tmp/hello.back" || fail "read gave back other bytes: $(cat "$tmp/hello.back")"
pass "write + read round trip of a text file"

head -c 65536 /dev/urandom >"$tmp/data.bin"
ctl write "$id" /workspace/notes/data.bin - <"$tmp/data.bin" >/dev/null
ctl read "$id" /workspace/notes/data.bin >"$tmp/data.back"
cmp -s "$tmp/data.bin" "$tmp/data.back" || fail "binary round trip differs ($(stat -c %s "$tmp/data.back") bytes back)"
pass "write (stdin) + read round trip of 64 KiB of binary"

run exec "$id" -- 'sha256sum notes/data.bin | cut -d" " -f1'
[ "$out" = "$(sha256sum "$tmp/data.bin" | cut -d' ' -f1)" ] || fail "the sandbox sees other bytes: $out"
pass "the sandbox's processes see the written file"

run ls "$id" /workspace/notes
expect_rc 0 "ls"
grep -Eq '^- +65536 .*data\.bin$' <<<"$out" && grep -Eq '^- +[0-9]+ .*hello\.txt$' <<<"$out" || fail "ls: $out"
run ls "$id"
grep -Eq '^d .*notes$' <<<"$out" || fail "ls /workspace: $out"
pass "ls lists files and directories"

run read "$id" /etc/passwd
expect_rc 1 "read outside /workspace"
grep -q "path not allowed" <<<"$err" || fail "read /etc/passwd: $err"
pass "a path outside /workspace is refused"

run delete "$id"
expect_rc 0 "delete"
grep -q '"deleted": true' <<<"$out" || fail "delete: $out"
run status "$id"
expect_rc 1 "status after delete"
grep -q "not found" <<<"$err" || fail "status after delete: $err"
[ "$(engine_agents | grep -o '"id"' | wc -l)" -eq 0 ] || fail "the engine still holds the sandbox: $(engine_agents)"
pass "delete removes it from the Worker and the engine"

# --- a database through the Worker (docs/protocol.md 4.3): sandboxctl for its life, REST for SQL ---
api() { # METHOD PATH [JSON]: the Worker's answer body; its status in $status
  local args=(-sS --max-time 60 -o "$tmp/api" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $key")
  [ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
  status=$(curl "${args[@]}" "$base$2")
  body=$(cat "$tmp/api")
}

run --json create sqlite --size lite
expect_rc 0 "create sqlite"
# With --json sandboxctl prints a database's whole Sandbox object.
db=$(sed -n 's/^ *"id": "\(sb_[0-9a-f]*\)".*/\1/p' <<<"$out" | head -n 1)
[[ "$db" =~ ^sb_[0-9a-f]+$ ]] || fail "create sqlite printed no sandbox id: $out"
grep -q '"startupTimeMs"' <<<"$out" || fail "create sqlite: no startupTimeMs in $out"
api GET "/api/databases/$db"
grep -q '"database":{[^}]*"database":"main.db"' <<<"$body" || fail "the database's Sandbox object: $body"
pass "create sqlite -> $db, with its database in the Sandbox object"

api POST "/api/databases/$db/execute" '{"sql":"CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)"}'
[ "$status" = 200 ] || fail "execute: $status $body"
api POST "/api/databases/$db/execute" '{"sql":"INSERT INTO t VALUES (?)","params":[9007199254740993]}'
[ "$status" = 200 ] || fail "insert a big integer: $status $body"
api POST "/api/databases/$db/query" '{"sql":"SELECT n FROM t ORDER BY n","rowMode":"array"}'
grep -q '"rows":\[\[1\],\[{"\$int":"9007199254740993"}\]\]' <<<"$body" || fail "query: $body"
pass "SQL through the Worker keeps a big integer exact"

api POST "/api/databases/$db/query" '{"sql":"SELECT 1\nFROM FROM"}'
[ "$status" = 422 ] && grep -q '"code":-32014' <<<"$body" && grep -q '"line":2' <<<"$body" || fail "bad SQL: $status $body"
pass "rejected SQL answers 422 -32014 with where"

run stop "$db"
expect_rc 0 "stop the database"
api POST "/api/databases/$db/query" '{"sql":"SELECT 1"}'
[ "$status" = 409 ] || fail "query on a stopped database: $status $body"
run start "$db"
expect_rc 0 "start the database"
api POST "/api/databases/$db/query" '{"sql":"SELECT count(*) AS c FROM t"}'
grep -q '"rows":\[{"c":2}\]' <<<"$body" || fail "after stop and start: $body"
run delete "$db"
expect_rc 0 "delete the database"
pass "stop (409), start with the data intact, delete"

say "all $checks checks passed"
