#pragma once

#include <QByteArray>
#include <QString>

namespace Sandbox::Engine {

// The SCRAM-SHA-256 secret PostgreSQL keeps for `password` (RFC 5802, 7677; PostgreSQL's
// "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", base64), computed as the server's
// `ALTER ROLE ... PASSWORD 'plain'` would (4096 iterations, a 16-byte random salt unless `salt` is
// given), so that the server only stores it. Empty for a password that is not pure ASCII: the
// server's SASLprep would normalise it first, so the server hashes those itself. CPU-bound
// (milliseconds): run it off the event loop.
QByteArray scramSha256Secret(const QString &password, QByteArray salt = {});

} // namespace Sandbox::Engine
