#include "filetransfer.h"

#include "../common/uistyle.h"

#include <client/client.h>

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QTimer>

namespace Sandbox::Ui {

struct FileTransfer::Step
{
    enum class Kind { Mkdir, UploadFile, DownloadFile, ListForDownload };
    Kind kind = Kind::UploadFile;
    QString local;
    QString remote;
    qint64 offset = 0;
    std::unique_ptr<QSaveFile> file;
};

FileTransfer::FileTransfer(Client *client, const QString &sandboxId, QObject *parent)
    : QObject(parent)
    , m_client(client)
    , m_sandboxId(sandboxId)
{}

FileTransfer::~FileTransfer()
{
    if (m_current && m_current->file)
        m_current->file->cancelWriting();
}

void FileTransfer::enqueue(std::unique_ptr<Step> step)
{
    const bool idle = !isBusy();
    m_steps.push_back(std::move(step));
    if (idle) {
        m_filesDone = 0;
        m_errors.clear();
        QTimer::singleShot(0, this, &FileTransfer::next);
    }
}

void FileTransfer::upload(const QStringList &localPaths, const QString &remoteDirectory)
{
    int files = 0;
    for (const QString &path : localPaths) {
        const QFileInfo info(path);
        const QString remoteBase = remoteDirectory + u'/' + info.fileName();
        if (info.isDir()) {
            auto mk = std::make_unique<Step>();
            mk->kind = Step::Kind::Mkdir;
            mk->remote = remoteBase;
            enqueue(std::move(mk));
            QDirIterator it(path, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden,
                            QDirIterator::Subdirectories);
            while (it.hasNext() && files < MaxFilesPerTransfer) {
                const QString p = it.next();
                const QFileInfo fi = it.fileInfo();
                if (fi.isSymLink())
                    continue; // links are not followed out of the chosen folder
                auto step = std::make_unique<Step>();
                step->local = p;
                step->remote = remoteBase + u'/' + QDir(path).relativeFilePath(p);
                step->kind = fi.isDir() ? Step::Kind::Mkdir : Step::Kind::UploadFile;
                if (!fi.isDir())
                    ++files;
                enqueue(std::move(step));
            }
        } else if (info.isFile()) {
            auto step = std::make_unique<Step>();
            step->kind = Step::Kind::UploadFile;
            step->local = path;
            step->remote = remoteBase;
            ++files;
            enqueue(std::move(step));
        } else {
            m_errors << tr("%1: not a file or folder").arg(path);
        }
        if (files >= MaxFilesPerTransfer) {
            m_errors << tr("only the first %1 files are uploaded at once").arg(MaxFilesPerTransfer);
            break;
        }
    }
    if (!isBusy())
        Q_EMIT finished(0, m_errors);
}

void FileTransfer::download(const QString &remotePath, bool isDirectory, const QString &localPath)
{
    auto step = std::make_unique<Step>();
    step->kind = isDirectory ? Step::Kind::ListForDownload : Step::Kind::DownloadFile;
    step->remote = remotePath;
    step->local = localPath;
    enqueue(std::move(step));
}

void FileTransfer::cancel()
{
    m_steps.clear();
    m_call.cancel();
    if (m_current && m_current->file)
        m_current->file->cancelWriting();
    m_current.reset();
    m_errors << tr("cancelled");
    Q_EMIT finished(m_filesDone, m_errors);
}

void FileTransfer::next()
{
    m_current.reset();
    if (m_steps.empty()) {
        Q_EMIT finished(m_filesDone, m_errors);
        return;
    }
    if (!m_client) {
        m_steps.clear();
        m_errors << tr("not connected");
        Q_EMIT finished(m_filesDone, m_errors);
        return;
    }
    m_current = std::move(m_steps.front());
    m_steps.pop_front();
    Step &step = *m_current;
    switch (step.kind) {
    case Step::Kind::Mkdir:
        m_call = m_client->sandboxes()
                     .mkdir(m_sandboxId, step.remote, true, this, [this](Result<QString> r) {
                         if (!r && r.error().code != ErrorCode::AlreadyExists)
                             fail(tr("%1: %2").arg(m_current->remote, r.error().message));
                         else
                             done();
                     });
        break;
    case Step::Kind::UploadFile:
        runUploadFile(step);
        break;
    case Step::Kind::DownloadFile:
        runDownloadPage(step);
        break;
    case Step::Kind::ListForDownload:
        runListForDownload(step);
        break;
    }
}

void FileTransfer::fail(const QString &message)
{
    m_errors << message;
    if (m_current && m_current->file)
        m_current->file->cancelWriting();
    QTimer::singleShot(0, this, &FileTransfer::next);
}

void FileTransfer::done()
{
    if (m_current
        && (m_current->kind == Step::Kind::UploadFile || m_current->kind == Step::Kind::Mkdir))
        Q_EMIT remoteChanged(QFileInfo(m_current->remote).path());
    QTimer::singleShot(0, this, &FileTransfer::next);
}

void FileTransfer::runUploadFile(Step &step)
{
    QFile file(step.local);
    if (file.size() > MaxUploadBytes) {
        fail(tr("%1 is %2; files over %3 cannot be uploaded over this connection")
                 .arg(step.local, Style::formatSize(file.size()),
                      Style::formatSize(MaxUploadBytes)));
        return;
    }
    if (!file.open(QIODevice::ReadOnly)) {
        fail(tr("%1: %2").arg(step.local, file.errorString()));
        return;
    }
    const QByteArray content = file.read(MaxUploadBytes + 1);
    Q_EMIT progress(tr("Uploading %1 (%2)…")
                        .arg(QFileInfo(step.local).fileName(), Style::formatSize(content.size())));
    WriteFileOptions options;
    options.parents = true;
    if (QFileInfo(step.local).isExecutable())
        options.mode = 0755;
    m_call = m_client->sandboxes().writeFile(m_sandboxId, step.remote, content, options, this,
                                             [this](Result<WriteFileResult> r) {
                                                 if (!r) {
                                                     fail(tr("%1: %2").arg(m_current->remote,
                                                                           r.error().message));
                                                     return;
                                                 }
                                                 ++m_filesDone;
                                                 done();
                                             });
}

void FileTransfer::runDownloadPage(Step &step)
{
    if (!step.file) {
        QDir().mkpath(QFileInfo(step.local).path());
        step.file = std::make_unique<QSaveFile>(step.local);
        if (!step.file->open(QIODevice::WriteOnly)) {
            fail(tr("%1: %2").arg(step.local, step.file->errorString()));
            return;
        }
        Q_EMIT progress(tr("Downloading %1…").arg(QFileInfo(step.remote).fileName()));
    }
    ReadFileOptions options;
    options.offset = step.offset;
    options.length = PageBytes;
    m_call = m_client->sandboxes()
                 .readFile(m_sandboxId, step.remote, options, this, [this](Result<FileContent> r) {
                     Step &s = *m_current;
                     if (!r) {
                         fail(tr("%1: %2").arg(s.remote, r.error().message));
                         return;
                     }
                     if (s.file->write(r->content) != r->content.size()) {
                         fail(tr("%1: %2").arg(s.local, s.file->errorString()));
                         return;
                     }
                     s.offset += r->content.size();
                     if (s.offset < r->size && !r->content.isEmpty()) {
                         Q_EMIT progress(tr("Downloading %1… %2 of %3")
                                             .arg(QFileInfo(s.remote).fileName(),
                                                  Style::formatSize(s.offset),
                                                  Style::formatSize(r->size)));
                         runDownloadPage(s);
                         return;
                     }
                     if (!s.file->commit()) {
                         fail(tr("%1: %2").arg(s.local, s.file->errorString()));
                         return;
                     }
                     s.file.reset();
                     ++m_filesDone;
                     done();
                 });
}

void FileTransfer::runListForDownload(Step &step)
{
    if (!QDir().mkpath(step.local)) {
        fail(tr("cannot create %1").arg(step.local));
        return;
    }
    m_call = m_client->sandboxes()
                 .listFiles(m_sandboxId, step.remote, true, this, [this](Result<FileListing> r) {
                     const Step &s = *m_current;
                     if (!r) {
                         fail(tr("%1: %2").arg(s.remote, r.error().message));
                         return;
                     }
                     if (r->truncated)
                         m_errors << tr("%1 holds more than the server lists at once; only part of "
                                        "it was downloaded")
                                         .arg(s.remote);
                     const QString base = s.remote.endsWith(u'/') ? s.remote : s.remote + u'/';
                     int count = 0;
                     for (const FileEntry &e : r->entries) {
                         if (!e.path.startsWith(base))
                             continue;
                         const QString rel = e.path.mid(base.size());
                         const QString root = QDir::cleanPath(s.local);
                         const QString local = QDir::cleanPath(root + u'/' + rel);
                         if (!local.startsWith(root + u'/'))
                             continue; // never outside the chosen folder, whatever the server says
                         if (e.type == FileEntry::Type::Directory) {
                             QDir().mkpath(local);
                         } else if (e.type == FileEntry::Type::File && count < MaxFilesPerTransfer) {
                             auto step = std::make_unique<Step>();
                             step->kind = Step::Kind::DownloadFile;
                             step->remote = e.path;
                             step->local = local;
                             m_steps.push_back(std::move(step));
                             ++count;
                         }
                     }
                     QTimer::singleShot(0, this, &FileTransfer::next);
                 });
}

} // namespace Sandbox::Ui
