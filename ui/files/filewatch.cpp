#include "filewatch.h"

#include "filetreemodel.h"

#include <client/client.h>
#include <client/execstream.h>

#include <QFileInfo>
#include <QJsonObject>

namespace Sandbox::Ui {

FileWatch::FileWatch(Client *client, FileTreeModel *model, QObject *parent)
    : QObject(parent)
    , m_client(client)
    , m_model(model)
{
    m_batch.setSingleShot(true);
    m_batch.setInterval(kBatchMs);
    connect(&m_batch, &QTimer::timeout, this, &FileWatch::apply);
    m_retry.setSingleShot(true);
    m_retry.setInterval(kRetryMs);
    connect(&m_retry, &QTimer::timeout, this, [this] {
        if (m_enabled && !m_stream)
            start();
    });
}

FileWatch::~FileWatch()
{
    stop();
}

void FileWatch::setEnabled(bool on)
{
    if (on == m_enabled)
        return;
    m_enabled = on;
    if (on)
        start();
    else
        stop();
}

void FileWatch::start()
{
    if (m_stream || !m_client)
        return;
    m_stream = m_client->sandboxes().watch(m_model->sandboxId(), m_model->rootPath(), true, this);
    if (!m_stream)
        return; // REST: the page lists again after commands instead
    connect(m_stream, &ExecStream::started, this, [this] {
        m_ready = true;
        Q_EMIT readyChanged(true);
    });
    connect(m_stream, &ExecStream::event, this, &FileWatch::onEvent);
    connect(m_stream, &ExecStream::ended, this, &FileWatch::ended);
    connect(m_stream, &ExecStream::failed, this, &FileWatch::ended);
    connect(m_stream, &ExecStream::gap, this, [this] {
        m_rescan = true; // changes were lost: list everything again
        m_batch.start();
    });
}

void FileWatch::stop()
{
    m_retry.stop();
    if (!m_stream)
        return;
    ExecStream *stream = std::exchange(m_stream, nullptr);
    stream->disconnect(this);
    stream->cancel();
    stream->deleteLater();
    if (std::exchange(m_ready, false))
        Q_EMIT readyChanged(false);
}

void FileWatch::ended()
{
    if (!m_stream)
        return;
    m_stream->disconnect(this);
    m_stream->deleteLater();
    m_stream = nullptr;
    if (std::exchange(m_ready, false))
        Q_EMIT readyChanged(false);
    if (m_enabled)
        m_retry.start();
}

void FileWatch::onEvent(const QJsonObject &event)
{
    const QString type = event.value(QStringLiteral("type")).toString();
    if (type == QLatin1String("rescan")) {
        m_rescan = true;
    } else {
        // The directory that holds what changed (for a rename, both ends).
        for (const char *key : {"path", "from"}) {
            const QString path = event.value(QLatin1String(key)).toString();
            if (!path.isEmpty() && path != m_model->rootPath())
                m_dirty.insert(QFileInfo(path).path());
        }
    }
    if (!m_batch.isActive())
        m_batch.start();
}

void FileWatch::apply()
{
    if (std::exchange(m_rescan, false)) {
        m_dirty.clear();
        m_model->refreshLoaded();
        return;
    }
    const QSet<QString> dirty = std::exchange(m_dirty, {});
    for (const QString &dir : dirty) {
        // Only what the model has loaded: a folder never opened is listed when it is opened.
        if (dir == m_model->rootPath() || m_model->indexOf(dir).isValid())
            m_model->refreshPath(dir);
    }
}

} // namespace Sandbox::Ui
