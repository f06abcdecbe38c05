#pragma once

#include <QList>
#include <QString>

namespace Sandbox::Engine {

// Which spare sandboxes the engine keeps started ahead of demand (docs/protocol.md 6): one per
// kind/type/size recently created, the most recent first, at most `capacity` in all, and none
// while the host's available memory is below `minAvailableMb`. Policy only: the SandboxManager
// starts and stops the spares.
class SparePool final
{
public:
    struct Shape
    {
        QString kind;
        QString type;
        QString size;
        bool operator==(const Shape &) const = default;
    };

    SparePool(int capacity, qint64 minAvailableMb,
              QString meminfo = QStringLiteral("/proc/meminfo"));

    int capacity() const { return m_capacity; }
    qint64 minAvailableMb() const { return m_minAvailableMb; }
    // A sandbox of this shape was just created: its shape moves to the front.
    void noteCreated(const Shape &shape);
    // The shapes that should have a spare now, most recent first (empty when memory is short).
    QList<Shape> wanted() const;
    // The host's MemAvailable in MiB (-1 when it cannot be read).
    qint64 availableMb() const;
    // Whether the host has less available than the spares need (then there are none).
    bool memoryIsShort() const;

private:
    int m_capacity;
    qint64 m_minAvailableMb;
    QString m_meminfo;
    QList<Shape> m_recent; // most recent first, at most m_capacity
};

} // namespace Sandbox::Engine
