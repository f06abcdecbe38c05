#pragma once

#include <client/rpccall.h>

#include <QObject>
#include <QPointer>
#include <QStringList>

#include <deque>
#include <memory>

class QSaveFile;

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

// Copies files between the local disk and a sandbox, one request at a time, in order.
// Uploads: files and whole directories (created with their parents), each file at most
// MaxUploadBytes (one writeFile must fit in one 16 MiB protocol message). Downloads: a file, or a
// directory with everything below it (listFiles recursive), read in pages of PageBytes into a
// QSaveFile, so that a half-read file never replaces a local one.
class FileTransfer final : public QObject
{
    Q_OBJECT

public:
    static constexpr qint64 MaxUploadBytes = 12LL * 1024 * 1024;
    static constexpr qint64 PageBytes = 8LL * 1024 * 1024;
    static constexpr int MaxFilesPerTransfer = 5000;

    FileTransfer(Client *client, const QString &sandboxId, QObject *parent = nullptr);
    ~FileTransfer() override;

    // `localPaths`: files or directories; `remoteDirectory`: where they go.
    void upload(const QStringList &localPaths, const QString &remoteDirectory);
    // A remote file to a local file path, or a remote directory into a local directory (created).
    void download(const QString &remotePath, bool isDirectory, const QString &localPath);
    bool isBusy() const { return !m_steps.empty() || m_current != nullptr; }
    void cancel();

Q_SIGNALS:
    void progress(const QString &message);
    // A remote directory whose content changed (to refresh its listing).
    void remoteChanged(const QString &remoteDirectory);
    // All queued work is done; `errors` lists what failed.
    void finished(int filesDone, const QStringList &errors);

private:
    struct Step;
    void enqueue(std::unique_ptr<Step> step);
    void next();
    void fail(const QString &message);
    void done();
    void runUploadFile(Step &step);
    void runDownloadPage(Step &step);
    void runListForDownload(Step &step);

    QPointer<Client> m_client;
    QString m_sandboxId;
    std::deque<std::unique_ptr<Step>> m_steps;
    std::unique_ptr<Step> m_current;
    RpcCall m_call;
    int m_filesDone = 0;
    QStringList m_errors;
};

} // namespace Sandbox::Ui
