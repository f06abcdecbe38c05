#!/usr/bin/env bash
# The six container images of dockerfiles/, built and driven as the Worker drives them: podman set
# up (scripts/podman-setup.sh), the images built (scripts/build-images.sh), then for each image a
# container started with SANDBOXD_API_KEY and port 8080 published, and sandboxctl --url against
# it: create, exec with streamed output, files, the limits the Sandbox object reports; for the
# databases a query, paging, and a committed row that survives kill -9 of the container's engine;
# for each agent a real run of its CLI against the mock model server (tests/mocks, on the host's
# loopback, which the container reaches through slirp4netns). Prints BUILD/IMAGE lines (times,
# sizes) and, per image, the cold start to the first exec's answer next to the local engine's
# (bubblewrap) in the same run.
#
#   scripts/test-containers.sh [TYPE...]      (default: all six; run as root or with sudo)
#   SKIP_BUILD=1   use the images as they are (sandbox/TYPE:VERSION)
#   KEEP=1         keep the containers and logs of a failed run
# Exits non-zero on the first failed check; removes every container and process it started.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
types=("$@")
((${#types[@]})) || types=(claude-code opencode codex postgres sqlite duckdb)
tag=$(sed -n 's/^ *VERSION \([0-9.]*\)$/\1/p' "$here/CMakeLists.txt" | head -1)
build="${SANDBOX_BUILD_DIR:-$here/build}"
ctl="$build/bin/sandboxctl"
t_start=$(date +%s)

[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=PATH,SKIP_BUILD,KEEP,SANDBOX_BUILD_DIR "$0" "$@"

work=$(mktemp -d /tmp/sandbox-containers.XXXXXX)
# The local engine's sandboxes run as other uids and pass through to their workspaces below it.
chmod 0711 "$work"
containers=()
pids=()
failed=0
cleanup() {
  local rc=$?
  for c in "${containers[@]}"; do
    if [ "$rc" -ne 0 ] && [ -n "${KEEP:-}" ]; then
      echo "test-containers: kept container $c" >&2
    else
      podman rm -f "$c" >/dev/null 2>&1 || true
    fi
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ] && [ -n "${KEEP:-}" ]; then
    echo "test-containers: logs in $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

log() { printf '%s\n' "$*"; }
fail() {
  log "FAIL: $*"
  exit 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# --- set-up: podman, the host's build (sandboxctl, the local engine, the mock), the images ---
"$here/scripts/podman-setup.sh"
if [ ! -x "$ctl" ] || [ ! -x "$build/tests/mocks/mock-model-server" ]; then
  SANDBOX_SKIP_AGENT_CLIS=${SANDBOX_SKIP_AGENT_CLIS:-} "$here/scripts/setup.sh"
fi
cmake --build "$build" --target sandboxctl sandboxd sandbox-supervisor sandbox-dbhost mock-model-server >/dev/null
if [ -z "${SKIP_BUILD:-}" ]; then
  BUILD_LOG_DIR="$work" "$here/scripts/build-images.sh" "${types[@]}"
fi

# The mock model APIs on the host's loopback: containers reach it as 10.0.2.2 (slirp4netns).
"$build/tests/mocks/mock-model-server" >"$work/mock.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$work/mock.log" && break; sleep 0.1; done
mock_port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$work/mock.log")
[ -n "$mock_port" ] || fail "the mock model server did not start: $(cat "$work/mock.log")"

is_db() { case "$1" in postgres | sqlite | duckdb) return 0 ;; *) return 1 ;; esac; }
agent_env() { # TYPE HOST: the sandbox's environment for the mock at HOST
  case "$1" in
    claude-code) echo "--env ANTHROPIC_API_KEY=sk-ant-mock --env ANTHROPIC_BASE_URL=http://$2:$mock_port" ;;
    *) echo "--env OPENAI_API_KEY=sk-mock --env OPENAI_BASE_URL=http://$2:$mock_port/v1" ;;
  esac
}
wait_health() { # URL: until /health answers (60 s)
  for _ in $(seq 600); do
    curl -fsS "$1/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
new_key() { echo "sk_ctr_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }

# --- the local engine's figure: engine start -> create -> first exec, bubblewrap ---
declare -A local_ms container_ms
local_dir="$work/local"
mkdir -p "$local_dir"
"$build/bin/sandboxd" --data-dir "$local_dir" --prepare postgres >/dev/null 2>&1 || true
for t in "${types[@]}"; do
  start=$(now_ms)
  "$build/bin/sandboxd" --listen 127.0.0.1:0 --data-dir "$local_dir" --agents-dir "$build/agents" \
    >"$work/local-$t.log" 2>&1 &
  engine=$!
  pids+=("$engine")
  for _ in $(seq 300); do grep -q listening "$work/local-$t.log" && break; sleep 0.05; done
  url=$(sed -n 's/.*listening on \(http:\/\/[0-9.:]*\).*/\1/p' "$work/local-$t.log")
  [ -n "$url" ] || fail "the local engine did not start: $(cat "$work/local-$t.log")"
  key=$(cat "$local_dir/api-key")
  if is_db "$t"; then
    id=$("$ctl" --url "$url" --key "$key" create "$t" 2>&1) || fail "local $t: create: $id"
  else
    id=$("$ctl" --url "$url" --key "$key" create "$t" --network 2>&1) || fail "local $t: create: $id"
  fi
  "$ctl" --url "$url" --key "$key" exec "$id" -- true || fail "local $t: first exec"
  local_ms[$t]=$(($(now_ms) - start))
  "$ctl" --url "$url" --key "$key" delete "$id" >/dev/null
  kill "$engine"
  wait "$engine" 2>/dev/null || true
done

# --- each image as the Worker runs it ---
check() { # NAME COMMAND...: runs a check, prints PASS/FAIL with its output on failure
  local name=$1
  shift
  if out=$("$@" 2>&1); then
    log "  PASS $name"
  else
    log "  FAIL $name"
    printf '%s\n' "$out" | sed 's/^/       /' | tail -20
    return 1
  fi
}

start_container() { # TYPE NAME KEY: starts it; sets $url
  podman run -d --name "$2" --network slirp4netns:allow_host_loopback=true \
    -p 127.0.0.1::8080 -e "SANDBOXD_API_KEY=$3" "sandbox/$1:$tag" >/dev/null
  local port
  port=$(podman port "$2" 8080 | sed 's/.*://')
  url="http://127.0.0.1:$port"
}

streamed_exec() { # the first line must arrive long before the command ends
  "$ctl" --url "$url" --key "$key" exec "$id" -- 'echo first; sleep 2; echo second; exit 7' \
    >"$work/stream.out" 2>&1 &
  local p=$! t0 first=""
  t0=$(now_ms)
  for _ in $(seq 100); do
    if grep -q first "$work/stream.out"; then first=$(($(now_ms) - t0)); break; fi
    sleep 0.02
  done
  local rc=0
  wait $p || rc=$?
  local total=$(($(now_ms) - t0))
  echo "first line after ${first:-never} ms, done after $total ms, exit $rc"
  [ -n "$first" ] && [ "$first" -lt 1500 ] && [ "$total" -ge 2000 ] && [ "$rc" -eq 7 ] \
    && grep -q second "$work/stream.out"
}

# shellcheck disable=SC2016 # the command runs in the sandbox
files_roundtrip() {
  printf 'line one\nline two\n' | "$ctl" --url "$url" --key "$key" write "$id" notes/a.txt - -p >/dev/null
  [ "$("$ctl" --url "$url" --key "$key" read "$id" notes/a.txt)" = "$(printf 'line one\nline two')" ] \
    && "$ctl" --url "$url" --key "$key" ls "$id" notes | grep -q '/workspace/notes/a.txt' \
    && "$ctl" --url "$url" --key "$key" exec "$id" -- 'test "$(wc -l </workspace/notes/a.txt)" = 2'
}

agent_run() { # TYPE: a real run of the CLI against the mock: it writes a file through its tool
  local marker="made by $1 in a container"
  "$ctl" --url "$url" --key "$key" run "$id" "[[write:/workspace/agent.txt|$marker]]" \
    --timeout 240000 >"$work/run-$1.out" 2>&1 || { cat "$work/run-$1.out"; return 1; }
  [ "$("$ctl" --url "$url" --key "$key" read "$id" agent.txt)" = "$marker" ]
}

db_sql() { # TYPE: a table, 1000 rows read in pages of 100, a committed row
  local gen
  case "$1" in
    postgres) gen="INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 1000) g" ;;
    sqlite) gen="INSERT INTO t WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < 1000) SELECT g, 'row ' || g FROM s" ;;
    duckdb) gen="INSERT INTO t SELECT g, 'row ' || g FROM range(1, 1001) r(g)" ;;
  esac
  "$ctl" --url "$url" --key "$key" execute "$id" "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)" \
    && "$ctl" --url "$url" --key "$key" execute "$id" "$gen" | grep -q 'INSERT 1000' \
    && "$ctl" --url "$url" --key "$key" query "$id" "SELECT id, v FROM t ORDER BY id" --page-size 100 \
      >"$work/pages.out" 2>"$work/pages.err" \
    && [ "$(wc -l <"$work/pages.out")" -eq 1001 ] \
    && grep -q '(1000 rows, 10 pages)\|(1000 rows, 11 pages)' "$work/pages.err" \
    && [ "$(sed -n '1001p' "$work/pages.out")" = "$(printf '1000\trow 1000')" ] \
    && "$ctl" --url "$url" --key "$key" execute "$id" "INSERT INTO t VALUES (1001, 'survivor')" \
    | grep -q 'INSERT 1'
}

limits_say_container() { # the Sandbox object says no limit is the engine's, and why: the container's
  local out
  out=$("$ctl" --url "$url" --key "$key" --json status "$id") || return 1
  printf '%s\n' "$out"
  grep -q '"enforced": false,' <<<"$out" \
    && [ "$(grep -c '"reason": "in a container' <<<"$out")" -eq 4 ] \
    && ! grep -q '"enforced": true' <<<"$out"
}

kill9_engine() { # the engine dies with kill -9 (and its container with it); started again, the row is there
  podman exec "$cname" sh -c 'kill -9 "$(pidof sandboxd)"' || true
  for _ in $(seq 100); do
    [ "$(podman inspect -f '{{.State.Running}}' "$cname")" = false ] && break
    sleep 0.1
  done
  [ "$(podman inspect -f '{{.State.Running}}' "$cname")" = false ] || { echo "the container still runs"; return 1; }
  podman start "$cname" >/dev/null || { echo "podman start failed"; return 1; }
  local port
  port=$(podman port "$cname" 8080 | sed 's/.*://')
  url="http://127.0.0.1:$port"
  if ! wait_health "$url"; then
    echo "no engine after the restart at $url; the container: $(podman inspect -f \
      '{{.State.Status}} exit {{.State.ExitCode}} {{.State.Error}}' "$cname"); its log:"
    podman logs --tail 20 "$cname" 2>&1
    return 1
  fi
  "$ctl" --url "$url" --key "$key" query "$id" "SELECT v FROM t WHERE id = 1001" | grep -qx survivor
}

for t in "${types[@]}"; do
  log "== sandbox/$t:$tag"
  key=$(new_key)
  cname="sandbox-test-$t-$$"
  containers+=("$cname")
  start=$(now_ms)
  start_container "$t" "$cname" "$key"
  wait_health "$url" || fail "$t: the engine in the container did not answer: $(podman logs "$cname" 2>&1 | tail -5)"
  if is_db "$t"; then
    id=$("$ctl" --url "$url" --key "$key" create "$t") || fail "$t: create: $id"
  else
    # shellcheck disable=SC2046 # word splitting of the --env pairs is wanted
    id=$("$ctl" --url "$url" --key "$key" create "$t" --network $(agent_env "$t" 10.0.2.2)) \
      || fail "$t: create: $id"
  fi
  [[ "$id" =~ ^sb_[0-9a-f]+$ ]] || fail "$t: create printed no id"
  "$ctl" --url "$url" --key "$key" exec "$id" -- true || fail "$t: first exec"
  container_ms[$t]=$(($(now_ms) - start))
  log "  PASS create + first exec ($id, ${container_ms[$t]} ms from podman run)"
  check "exec streams its output live and exits with the command's status" streamed_exec || failed=1
  check "files: write, read, ls, seen by exec" files_roundtrip || failed=1
  check "its limits say they are the container's (memory, pids, cpu, disk)" limits_say_container \
    || failed=1
  if is_db "$t"; then
    check "SQL: 1000 rows read in pages of 100, a committed row" db_sql "$t" || failed=1
    check "the committed row survives kill -9 of the container's engine" kill9_engine || failed=1
  else
    check "a real $t run against the mock model server writes its file" agent_run "$t" || failed=1
  fi
  ((failed == 0)) || fail "sandbox/$t:$tag"
  podman rm -f "$cname" >/dev/null
done

log ""
log "Cold start -> first exec (engine start, create, first exec), same run:"
for t in "${types[@]}"; do
  c=${container_ms[$t]}
  l=${local_ms[$t]}
  printf 'COLD %-12s container %6d ms   local engine %6d ms   ratio %d.%02dx\n' "$t" "$c" "$l" \
    "$((c / l))" "$((c * 100 / l % 100))"
done
log "test-containers: all checks passed in $(($(date +%s) - t_start)) s"
