#include "sparepool.h"

#include <QFile>

namespace Sandbox::Engine {

SparePool::SparePool(int capacity, qint64 minAvailableMb, QString meminfo)
    : m_capacity(qMax(0, capacity))
    , m_minAvailableMb(minAvailableMb)
    , m_meminfo(std::move(meminfo))
{}

void SparePool::noteCreated(const Shape &shape)
{
    m_recent.removeAll(shape);
    m_recent.prepend(shape);
    while (m_recent.size() > m_capacity)
        m_recent.removeLast();
}

QList<SparePool::Shape> SparePool::wanted() const
{
    if (m_recent.isEmpty() || memoryIsShort())
        return {};
    return m_recent;
}

bool SparePool::memoryIsShort() const
{
    const qint64 available = availableMb();
    return available >= 0 && available < m_minAvailableMb;
}

qint64 SparePool::availableMb() const
{
    QFile f(m_meminfo);
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    // "MemAvailable:   23073000 kB"; the file is a few lines, read in one go.
    const QByteArray all = f.read(16384);
    const qsizetype at = all.indexOf("MemAvailable:");
    if (at < 0)
        return -1;
    const qsizetype end = all.indexOf('\n', at);
    bool ok = false;
    const qint64 kb
        = all.mid(at + 13, end < 0 ? -1 : end - at - 13).replace("kB", "").trimmed().toLongLong(&ok);
    return ok ? kb / 1024 : -1;
}

} // namespace Sandbox::Engine
