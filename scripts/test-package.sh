#!/usr/bin/env bash
# The .deb on a clean machine: builds it (cpack -G DEB in the build tree), installs it with apt in
# a fresh debian:bookworm container (rootful podman, scripts/podman-setup.sh), then as a user of
# the package would: `sandboxd doctor` (the agent CLIs are not there yet, and its fix says how
# they come), the app (offscreen) starting the engine from the package and quitting once
# connected, the engine installing OpenCode's CLI from npm through `sandboxctl agents
# install-cli`, and a real OpenCode run against the mock model server (tests/mocks, on the
# host's loopback, reached from the container as 10.0.2.2 through slirp4netns) that writes a
# file. Prints TIME lines for each step.
#
#   sudo scripts/test-package.sh       (KEEP=1 keeps the container and logs of a failed run)
#
# Not part of scripts/test.sh: with podman already set up it took 409 s here, 357 s of them apt
# installing the package and its recommends (Node.js, npm) in the container; podman's set-up from
# scratch adds about 3 minutes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="${SANDBOX_BUILD_DIR:-$here/build}"
[ "$(id -u)" -eq 0 ] || exec sudo --preserve-env=PATH,KEEP,SANDBOX_BUILD_DIR "$0" "$@"

t_start=$(date +%s)
work=$(mktemp -d /tmp/sandbox-package.XXXXXX)
cname="sandbox-package-$$"
pids=()
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "${KEEP:-}" ]; then
    echo "test-package: kept container $cname and $work" >&2
  else
    podman rm -f "$cname" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
log() { printf '%s\n' "$*"; }
fail() {
  log "test-package: FAIL: $*"
  exit 1
}
now() { date +%s%N; }
step_start=$(now)
timed() { # NAME: prints how long since the last step
  local t
  t=$(now)
  printf 'TIME %-40s %6d ms\n' "$1" $(((t - step_start) / 1000000))
  step_start=$t
}
in_container() { podman exec "$cname" bash -c "$1"; }

# --- the package and the host's side -------------------------------------------------------------
"$here/scripts/podman-setup.sh" >/dev/null
timed "podman ready"
cmake --build "$build" -j2 --target sandboxd sandbox-supervisor sandbox-dbhost sandboxctl \
  sandbox-desktop mock-model-server >/dev/null
(cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) ||
  fail "cpack: $(tail -20 "$work/cpack.log")"
deb=$(ls "$work"/deb/*.deb)
timed "cpack -G DEB ($(du -h "$deb" | cut -f1))"

"$build/tests/mocks/mock-model-server" >"$work/mock.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q listening "$work/mock.log" && break; sleep 0.1; done
mock_port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$work/mock.log")
[ -n "$mock_port" ] || fail "the mock model server did not start: $(cat "$work/mock.log")"

# --- a clean Debian 12 with the package ------------------------------------------------------------
# --privileged: bubblewrap makes namespaces for every sandbox, as on a real machine.
podman run -d --name "$cname" --privileged --pull=never \
  --network slirp4netns:allow_host_loopback=true \
  -v "$work/deb:/deb:ro" docker.io/library/debian:bookworm sleep infinity >/dev/null
in_container 'command -v sandboxd npm node >/dev/null' && fail "the image is not clean"
timed "container started"
in_container 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
  apt-get install -y -qq /deb/*.deb >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }' ||
  fail "apt install of the package"
timed "apt install ./sandbox-desktop.deb"
in_container 'dpkg -s sandbox-desktop | grep -q "^Recommends:.*npm"' ||
  fail "the package does not recommend npm"
for f in /usr/bin/sandboxd /usr/bin/sandboxctl /usr/bin/sandbox-desktop \
  /usr/libexec/sandbox-desktop/sandbox-supervisor; do
  in_container "test -x $f" || fail "$f is not installed"
done

# doctor, before any CLI: it says how they come, not scripts/setup.sh.
in_container 'sandboxd doctor --no-probe' >"$work/doctor.txt" 2>&1 || true
grep -q "Agent CLIs.*no agent CLI is installed yet" "$work/doctor.txt" ||
  fail "doctor: $(grep -A1 'Agent CLIs' "$work/doctor.txt")"
grep -q "sandboxctl agents install-cli" "$work/doctor.txt" || fail "doctor's fix: $(cat "$work/doctor.txt")"
grep -q "setup.sh" "$work/doctor.txt" && fail "doctor still names scripts/setup.sh"
log "test-package: doctor: $(grep 'Agent CLIs' "$work/doctor.txt" | tr -s ' ')"

# npm, as apt's Recommends bring it (installed with the package above when recommends are on;
# the test installs it explicitly so that a minimal install is covered too).
in_container 'command -v npm >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/tmp/apt-npm.log 2>&1 || { tail -20 /tmp/apt-npm.log; exit 1; }; }' ||
  fail "apt install npm"
timed "npm present ($(in_container 'npm --version'))"

# The engine from the package. In a container the disk images' loop devices and a cgroup tree of
# its own are not there: those two limits are off (the doctor says so on a real machine).
# shellcheck disable=SC2016 # expanded in the container
in_container 'nohup sandboxd --listen 127.0.0.1:7465 --no-disk-limit --no-cgroups \
  >/var/log/sandboxd.log 2>&1 & for _ in $(seq 100); do grep -q listening /var/log/sandboxd.log && exit 0; sleep 0.1; done; cat /var/log/sandboxd.log; exit 1' ||
  fail "sandboxd from the package did not start"
timed "sandboxd started"
# The app from the package, offscreen: it finds the running engine's key and connects.
in_container 'QT_QPA_PLATFORM=offscreen timeout 60 sandbox-desktop --quit-when-ready' \
  >"$work/app.log" 2>&1 || fail "the app did not connect: $(tail -5 "$work/app.log")"
timed "sandbox-desktop connected and quit"

# The CLI, installed by the engine on demand.
in_container 'sandboxctl agents clis' >"$work/clis.txt" 2>&1 || fail "agents clis: $(cat "$work/clis.txt")"
grep -q "^opencode .*not installed" "$work/clis.txt" || fail "agents clis: $(cat "$work/clis.txt")"
in_container 'sandboxctl agents install-cli opencode' >"$work/install.txt" 2>&1 ||
  fail "install-cli: $(tail -20 "$work/install.txt")"
grep -q "^downloading" "$work/install.txt" || fail "install-cli showed no progress: $(cat "$work/install.txt")"
grep -q "installed in /var/lib/sandboxd/agents/opencode" "$work/install.txt" ||
  fail "install-cli: $(cat "$work/install.txt")"
timed "sandboxctl agents install-cli opencode"

# A real run against the mock model server.
id=$(in_container "sandboxctl create opencode --allow 10.0.2.2:$mock_port \
  --env OPENAI_API_KEY=sk-mock --env OPENAI_BASE_URL=http://10.0.2.2:$mock_port/v1") ||
  fail "create: $id"
[[ "$id" =~ ^sb_[0-9a-f]+$ ]] || fail "create printed no id: $id"
marker="made by the packaged engine"
in_container "sandboxctl run $id '[[write:/workspace/agent.txt|$marker]]' --timeout 240000" \
  >"$work/run.txt" 2>&1 || fail "run: $(tail -20 "$work/run.txt")"
[ "$(in_container "sandboxctl read $id agent.txt")" = "$marker" ] || fail "the run wrote no file"
timed "an OpenCode run against the mock"

log "test-package: passed in $(($(date +%s) - t_start)) s"
