#include "cursorregistry.h"

#include "databasebackend.h"

#include <QDateTime>
#include <QRandomGenerator>

#include <algorithm>

namespace Sandbox::Engine {

namespace {

qint64 now()
{
    return QDateTime::currentMSecsSinceEpoch();
}

} // namespace

QString newHandleId(const QString &prefix)
{
    quint32 r[3];
    QRandomGenerator::system()->fillRange(r, 3);
    return prefix
           + QString::fromLatin1(QByteArray(reinterpret_cast<const char *>(r), sizeof r).toHex());
}

CursorRegistry::CursorRegistry(Limits limits, BackendOf backendOf)
    : m_limits(limits)
    , m_backendOf(std::move(backendOf))
{}

CursorRegistry::~CursorRegistry() = default;

QString CursorRegistry::open(Cursor cursor)
{
    // Keep at most perDatabase: the least recently used goes first.
    QList<Cursor *> same;
    for (const auto &c : std::as_const(m_cursors))
        if (c->databaseId == cursor.databaseId)
            same.append(c.get());
    std::sort(same.begin(), same.end(),
              [](const Cursor *a, const Cursor *b) { return a->lastUsed < b->lastUsed; });
    QStringList oldest;
    for (qsizetype i = 0; i + m_limits.perDatabase <= same.size(); ++i)
        oldest.append(same[i]->id);
    for (const QString &id : std::as_const(oldest))
        close(id);
    cursor.id = newHandleId(QStringLiteral("cur_"));
    cursor.lastUsed = now();
    const QString id = cursor.id;
    m_cursors.insert(id, std::make_shared<Cursor>(std::move(cursor)));
    return id;
}

CursorRegistry::Cursor *CursorRegistry::find(const QString &id, const QString &keyId,
                                             const QString &databaseId) const
{
    Cursor *c = get(id);
    return c && c->keyId == keyId && c->databaseId == databaseId ? c : nullptr;
}

void CursorRegistry::touch(Cursor *cursor) const
{
    cursor->lastUsed = now();
}

void CursorRegistry::close(const QString &id)
{
    const std::shared_ptr<Cursor> c = m_cursors.take(id);
    if (!c)
        return;
    if (DatabaseBackend *backend = m_backendOf(c->databaseId))
        backend->closeCursor(c->backendCursor);
    c->activity.end();
}

QStringList CursorRegistry::idsOf(const QString &databaseId) const
{
    QStringList ids;
    for (const auto &c : std::as_const(m_cursors))
        if (c->databaseId == databaseId)
            ids.append(c->id);
    return ids;
}

void CursorRegistry::drop(const QString &databaseId)
{
    for (const QString &id : idsOf(databaseId))
        m_cursors.remove(id);
}

void CursorRegistry::expire()
{
    const qint64 t = now();
    QStringList old;
    for (const auto &c : std::as_const(m_cursors))
        if (!c->fetching && t - c->lastUsed > m_limits.idleMs)
            old.append(c->id);
    for (const QString &id : std::as_const(old))
        close(id);
}

} // namespace Sandbox::Engine
