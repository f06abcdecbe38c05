#include "keystore.h"

#include <QCryptographicHash>
#include <QRandomGenerator>

namespace Sandbox::Engine {

namespace {

QByteArray sha256(QByteArrayView bytes)
{
    return QCryptographicHash::hash(bytes, QCryptographicHash::Sha256);
}

QByteArray randomBytes(int n)
{
    QByteArray b(n, Qt::Uninitialized);
    QRandomGenerator::system()->fillRange(reinterpret_cast<quint32 *>(b.data()), n / 4);
    return b;
}

// How stale a key's last use may be: its registry row is written at most this often.
constexpr qint64 kLastUsedStepSeconds = 60;

bool constantTimeEquals(QByteArrayView a, QByteArrayView b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

} // namespace

KeyStore::KeyStore(Registry *registry, std::function<QDateTime()> now)
    : m_registry(registry)
    , m_now(std::move(now))
    , m_keys(registry->keys())
{}

Result<bool> KeyStore::import(const QString &name, QByteArrayView key, bool admin)
{
    const QByteArray hash = sha256(key);
    for (const KeyRecord &k : std::as_const(m_keys)) {
        if (k.hash == hash)
            return false;
    }
    const KeyRecord record{QStringLiteral("key_") + QString::fromLatin1(randomBytes(8).toHex()),
                           name,
                           hash,
                           m_now(),
                           {},
                           admin};
    if (const auto ok = m_registry->insertKey(record); !ok)
        return ok.error();
    m_keys.append(record);
    return true;
}

bool KeyStore::isAdmin(const QString &id) const
{
    return std::any_of(m_keys.begin(), m_keys.end(),
                       [&](const KeyRecord &k) { return k.id == id && k.admin; });
}

Result<NewKey> KeyStore::create(const QString &name, bool admin)
{
    NewKey k;
    k.id = QStringLiteral("key_") + QString::fromLatin1(randomBytes(8).toHex());
    k.name = name.isEmpty() ? QStringLiteral("default") : name;
    k.key = QStringLiteral("sk_")
            + QString::fromLatin1(randomBytes(32).toBase64(QByteArray::Base64UrlEncoding
                                                           | QByteArray::OmitTrailingEquals));
    k.createdAt = m_now();
    k.admin = admin;
    const KeyRecord record{k.id, k.name, sha256(k.key.toLatin1()), k.createdAt, {}, admin};
    if (const auto ok = m_registry->insertKey(record); !ok)
        return ok.error();
    m_keys.append(record);
    return k;
}

Result<QString> KeyStore::verify(QByteArrayView presentedKey)
{
    const QByteArray hash = sha256(presentedKey);
    KeyRecord *found = nullptr;
    // Every stored hash is compared, whether or not an earlier one matched.
    for (KeyRecord &k : m_keys) {
        if (constantTimeEquals(hash, k.hash) && !presentedKey.isEmpty())
            found = &k;
    }
    if (!found)
        return Error{ErrorCode::Unauthorized, QStringLiteral("missing or invalid API key"), {}};
    noteUse(*found);
    return found->id;
}

void KeyStore::noteUse(const QString &id)
{
    for (KeyRecord &k : m_keys) {
        if (k.id == id)
            return noteUse(k);
    }
}

void KeyStore::noteUse(KeyRecord &key)
{
    const QDateTime now = m_now();
    if (!key.lastUsedAt.isValid() || key.lastUsedAt.secsTo(now) >= kLastUsedStepSeconds) {
        key.lastUsedAt = now;
        m_registry->touchKey(key.id, now);
    }
}

Result<bool> KeyStore::revoke(const QString &id)
{
    const auto removed = m_registry->removeKey(id);
    if (removed && *removed)
        m_keys.removeIf([&](const KeyRecord &k) { return k.id == id; });
    return removed;
}

QList<NewKey> KeyStore::list() const
{
    QList<NewKey> out;
    for (const KeyRecord &k : m_keys)
        out.append(NewKey{k.id, k.name, {}, k.createdAt, k.admin, k.lastUsedAt});
    return out;
}

bool KeyStore::isEmpty() const
{
    return m_keys.isEmpty();
}

QByteArray KeyStore::bearerToken(QByteArrayView header)
{
    const QByteArray h = header.toByteArray().trimmed();
    if (h.size() < 7 || qstrnicmp(h.constData(), "bearer ", 7) != 0)
        return {};
    return h.mid(7).trimmed();
}

} // namespace Sandbox::Engine
