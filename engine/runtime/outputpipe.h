#pragma once

#include "outputbytes.h"
#include "uniquefd.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QPointer>
#include <QString>

#include <functional>
#include <memory>

class QTimer;

namespace Sandbox::Engine {

class FdPoller;

// The read end of an exec's stdout or stderr pipe, handed to the engine by the supervisor
// (engine/supervisor/PROTOCOL.md, "Output pipes"), so that the command's output reaches the
// engine in one copy instead of passing through the supervisor. The descriptor comes from inside
// the sandbox: check() it first. It is read with RWF_NOWAIT, never blocking whatever the sandbox
// does to the open file it may share (its O_NONBLOCK), one read per wake-up of at most what the
// owner has room for, and only while reading is on.
class OutputPipe final
{
public:
    // The most one read takes: the pipe's whole buffer (the supervisor makes it 1 MiB).
    static constexpr qsizetype kMaxRead = 1024 * 1024;

    // `room` says how many bytes may be read now (0: stop reading until setReading(true));
    // `onData` gets each read's bytes (valid during the call; the array they were read into may
    // be taken), `onEnd` the end of the pipe (its writers are gone, or it failed); the pipe is
    // closed before onEnd. Both may destroy this. `buffer` is the owner's, shared by its pipes
    // (none of them reads while another's handler runs); a read goes OutputBytes::kRoom bytes
    // into it, and into a new one when the last was taken.
    OutputPipe(UniqueFd fd, FdPoller *poller, QByteArray *buffer, std::function<qsizetype()> room,
               std::function<void(OutputBytes)> onData, std::function<void()> onEnd);
    ~OutputPipe();
    OutputPipe(const OutputPipe &) = delete;
    OutputPipe &operator=(const OutputPipe &) = delete;

    // A descriptor from the supervisor that may be read as an output pipe: a pipe (FIFO) opened
    // for reading whose inode is `inode`. Empty when acceptable, else what is wrong.
    static QString check(int fd, quint64 inode);
    // Whether this kernel reads a pipe with RWF_NOWAIT (else streams go through the supervisor:
    // a plain read could block on a pipe whose O_NONBLOCK the sandbox cleared).
    static bool readsWithoutWaiting();

    bool isOpen() const { return m_fd.isValid(); }
    // Past what the exec may pass on (its maxOutputBytes): the rest is thrown away, spliced into
    // /dev/null, at most kMaxRead per kDiscardPause. A command writing without end then writes at
    // 100 MiB/s at most, and costs the engine a bounded share of a core (a supervisor reading it
    // used the sandbox's own CPU share; the engine's is everyone's).
    void discardRest();
    static constexpr int kDiscardPauseMs = 10;
    // Off: out of the poller (a pipe whose writers are gone would be reported for ever).
    void setReading(bool on);
    void close();

private:
    void onReady();

    UniqueFd m_fd;
    QPointer<FdPoller> m_poller; // not owned
    QByteArray *m_buffer;        // not owned
    std::function<qsizetype()> m_room;
    std::function<void(OutputBytes)> m_onData;
    std::function<void()> m_onEnd;
    bool m_reading = false;
    UniqueFd m_null;                 // /dev/null, once discarding
    std::unique_ptr<QTimer> m_pause; // between two discards
};

} // namespace Sandbox::Engine
