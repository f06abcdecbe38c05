#!/bin/sh
# Regenerates the test-only TLS material of the egress tests: a CA and a server certificate for
# localhost / model.test / 127.0.0.1, valid for 100 years. Never used outside the tests.
set -eu
cd "$(dirname "$0")"
openssl req -x509 -newkey rsa:2048 -nodes -days 36500 -subj "/CN=Sandbox egress test CA" \
    -keyout ca.key -out ca.pem >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=model.test" -keyout server.key -out server.csr \
    >/dev/null 2>&1
printf 'subjectAltName=DNS:localhost,DNS:model.test,IP:127.0.0.1\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 \
    -extfile server.ext -out server.pem >/dev/null 2>&1
rm -f server.csr server.ext ca.srl ca.key
