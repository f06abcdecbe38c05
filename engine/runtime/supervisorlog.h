#pragma once

#include "uniquefd.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

class QTimer;

namespace Sandbox::Engine {

class FdPoller;

// Reads a sandbox supervisor's stderr (a pipe) into the engine's log, bounded: each line at most
// kMaxLine bytes with control characters escaped (so that no line can pass for another of the
// engine's), at most kLinesPerSecond lines logged (the rest dropped and counted in one summary
// line per second), and at most kBytesPerSecond read (beyond that the pipe is left full until
// the next second, which slows the writer down instead of the engine).
class SupervisorLog final : public QObject
{
    Q_OBJECT

public:
    static constexpr qsizetype kMaxLine = 512;
    static constexpr int kLinesPerSecond = 20;
    static constexpr qsizetype kBytesPerSecond = 256 * 1024;

    // `poller`: the engine's one for every sandbox (null: one of its own).
    SupervisorLog(UniqueFd pipe, QString sandboxId, FdPoller *poller = nullptr,
                  QObject *parent = nullptr);
    ~SupervisorLog() override;

    // The last few lines (escaped), for the reason a sandbox ended.
    QString lastLine() const { return m_tail.isEmpty() ? QString() : m_tail.constLast(); }
    qint64 droppedLines() const { return m_droppedTotal; }

private:
    void onReadable();
    void onSecond();
    void takeLine(QByteArrayView line, bool cut);
    // In the poller while reading, out of it while paused or ended.
    void watch(bool on);
    void closePipe();

    UniqueFd m_pipe;
    QString m_id;
    QPointer<FdPoller> m_poller; // not owned, unless it is a child
    bool m_watched = false;
    QTimer *m_second = nullptr; // owned (child)
    QByteArray m_partial;
    bool m_skipping = false; // the rest of an over-long line
    qsizetype m_bytesThisSecond = 0;
    int m_linesThisSecond = 0;
    qint64 m_droppedThisSecond = 0;
    qint64 m_droppedTotal = 0;
    QStringList m_tail;
};

} // namespace Sandbox::Engine
