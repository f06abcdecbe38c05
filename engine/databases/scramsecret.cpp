#include "scramsecret.h"

#include <QCryptographicHash>
#include <QMessageAuthenticationCode>
#include <QPasswordDigestor>
#include <QRandomGenerator>

#include <algorithm>

namespace Sandbox::Engine {

namespace {

constexpr int kIterations = 4096; // PostgreSQL's scram_iterations
constexpr int kSaltBytes = 16;    // PostgreSQL's SCRAM_DEFAULT_SALT_LEN
constexpr int kKeyBytes = 32;     // SHA-256

} // namespace

QByteArray scramSha256Secret(const QString &password, QByteArray salt)
{
    // PostgreSQL's pg_saslprep returns a pure ASCII password as it is; anything else it
    // normalises (NFKC, mappings), which is the server's to do.
    if (!std::all_of(password.cbegin(), password.cend(),
                     [](QChar c) { return c.unicode() > 0 && c.unicode() < 0x80; }))
        return {};
    if (salt.isEmpty()) {
        quint32 words[kSaltBytes / 4];
        QRandomGenerator::system()->fillRange(words);
        salt = QByteArray(reinterpret_cast<const char *>(words), kSaltBytes);
    }
    const QByteArray salted = QPasswordDigestor::deriveKeyPbkdf2(QCryptographicHash::Sha256,
                                                                 password.toLatin1(), salt,
                                                                 kIterations, kKeyBytes);
    const auto hmac = [&salted](QByteArrayView text) {
        return QMessageAuthenticationCode::hash(text.toByteArray(), salted,
                                                QCryptographicHash::Sha256);
    };
    const QByteArray storedKey = QCryptographicHash::hash(hmac("Client Key"),
                                                          QCryptographicHash::Sha256);
    return "SCRAM-SHA-256$" + QByteArray::number(kIterations) + ':' + salt.toBase64() + '$'
           + storedKey.toBase64() + ':' + hmac("Server Key").toBase64();
}

} // namespace Sandbox::Engine
