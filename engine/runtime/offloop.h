#pragma once

#include <QObject>
#include <QThread>

#include <functional>
#include <memory>
#include <optional>

namespace Sandbox::Engine {

// Runs `work` on a thread of its own and hands its result to `done` in `context`'s thread — not
// at all when `context` is gone by then. For blocking file-system work (attaching a disk image,
// deleting a tree) that must not stall the event loop; each call is rare, so a thread per call.
// Returns the thread (it deletes itself once finished): for an owner that must wait for it.
template<typename T>
QThread *runOffLoop(QObject *context, std::function<T()> work, std::function<void(T)> done)
{
    auto result = std::make_shared<std::optional<T>>();
    QThread *thread = QThread::create([result, work = std::move(work)] { result->emplace(work()); });
    QObject::connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    QObject::connect(thread, &QThread::finished, context, [result, done = std::move(done)] {
        if (*result)
            done(std::move(**result));
    });
    thread->start();
    return thread;
}

} // namespace Sandbox::Engine
