#pragma once

#include <QObject>
#include <QPointer>
#include <QSet>
#include <QTimer>

namespace Sandbox {
class Client;
class ExecStream;
} // namespace Sandbox

namespace Sandbox::Ui {

class FileTreeModel;

// Keeps a FileTreeModel in step with its sandbox: follows sandbox.watch (docs/protocol.md 4.5.1)
// on the model's root, recursively, and lists again (FileTreeModel::refreshPath, which applies
// only the differences) each loaded directory that an event names, a few at a time; a `rescan`
// lists every loaded directory again. Over a connection that cannot stream (REST) it does
// nothing. A watch that ends while wanted is started again after kRetryMs.
class FileWatch final : public QObject
{
    Q_OBJECT

public:
    static constexpr int kBatchMs = 50;
    static constexpr int kRetryMs = 5000;

    FileWatch(Client *client, FileTreeModel *model, QObject *parent = nullptr);
    ~FileWatch() override;

    // Follows the sandbox's files while `on` (while it runs); off stops the watch.
    void setEnabled(bool on);
    bool isWatching() const { return m_stream != nullptr; }
    // The watch is set up (the engine answered).
    bool isReady() const { return m_ready; }

Q_SIGNALS:
    void readyChanged(bool ready);

private:
    void start();
    void stop();
    void onEvent(const QJsonObject &event);
    void apply();
    void ended();

    QPointer<Client> m_client;
    FileTreeModel *m_model;         // not owned (our parent's)
    ExecStream *m_stream = nullptr; // owned (child)
    bool m_enabled = false;
    bool m_ready = false;
    bool m_rescan = false;
    QSet<QString> m_dirty; // directories to list again
    QTimer m_batch;
    QTimer m_retry;
};

} // namespace Sandbox::Ui
