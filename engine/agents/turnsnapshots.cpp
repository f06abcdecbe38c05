#include "turnsnapshots.h"

#include "linediff.h"
#include "runtime/fsuidguard.h"
#include "runtime/hostfs.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSet>
#include <QStringDecoder>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace Sandbox::Engine {

namespace {

const QString kWorkspace = QStringLiteral("/workspace");

// Manifest entries (short keys: a record can hold 10 000 of them).
const QString kType = QStringLiteral("t"); // "f" file, "l" symbolic link
const QString kSize = QStringLiteral("s");
const QString kMtime = QStringLiteral("m");
const QString kCtime = QStringLiteral("c");
const QString kInode = QStringLiteral("i");
const QString kMode = QStringLiteral("p");
const QString kHash = QStringLiteral("h");      // content kept under this SHA-256
const QString kLink = QStringLiteral("l");      // a link's target
const QString kNoContent = QStringLiteral("n"); // why the content is not kept

qint64 nanos(const struct timespec &t)
{
    return qint64(t.tv_sec) * 1000000000 + t.tv_nsec;
}

Error notFound(const QString &what)
{
    return Error{ErrorCode::NotFound, what, {}};
}

Error storeError(const QString &what)
{
    return Error{ErrorCode::SandboxError, what, {}};
}

QJsonObject readJson(const QString &path, bool *exists = nullptr)
{
    QFile f(path);
    if (exists)
        *exists = f.exists();
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

bool writeJson(const QString &path, const QJsonObject &o)
{
    QSaveFile f(path);
    return f.open(QIODevice::WriteOnly)
           && f.write(QJsonDocument(o).toJson(QJsonDocument::Compact)) >= 0 && f.commit();
}

bool isText(const QByteArray &bytes)
{
    if (bytes.contains('\0'))
        return false;
    QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    (void)utf8.decode(bytes);
    return !utf8.hasError();
}

// "ref: refs/heads/main" → main; a detached HEAD → its first 12 hex digits.
QJsonObject gitInfo(int workspaceFd, const QString &cwd, uid_t uid)
{
    QString rel = cwd.startsWith(kWorkspace) ? cwd.mid(kWorkspace.size()) : QString();
    while (rel.startsWith(u'/'))
        rel.remove(0, 1);
    for (int up = 0; up < 64; ++up) {
        const QByteArray head = QFile::encodeName(
            rel.isEmpty() ? QStringLiteral(".git/HEAD") : rel + QStringLiteral("/.git/HEAD"));
        FsUidGuard guard(uid);
        HostFs::Fd fd(HostFs::openBeneath(workspaceFd, head, O_RDONLY | O_NONBLOCK));
        if (fd.isValid()) {
            struct stat st;
            char buf[256];
            if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
                return {};
            const ssize_t n = ::read(fd.get(), buf, sizeof buf);
            if (n <= 0)
                return {};
            const QString text = QString::fromUtf8(buf, n).trimmed();
            const QString root = rel.isEmpty() ? kWorkspace : kWorkspace + u'/' + rel;
            static const QRegularExpression refRe(
                QStringLiteral("^ref: refs/heads/([^\\s]{1,200})$"));
            static const QRegularExpression shaRe(QStringLiteral("^[0-9a-f]{40,64}$"));
            if (const auto m = refRe.match(text); m.hasMatch())
                return {{QStringLiteral("root"), root}, {QStringLiteral("branch"), m.captured(1)}};
            if (shaRe.match(text).hasMatch())
                return {{QStringLiteral("root"), root},
                        {QStringLiteral("branch"), QJsonValue()},
                        {QStringLiteral("head"), text.left(12)}};
            return {};
        }
        if (rel.isEmpty())
            return {};
        rel = rel.contains(u'/') ? rel.section(u'/', 0, -2) : QString();
    }
    return {};
}

// One walk of the workspace.
struct Walk
{
    const TurnSnapshots::Limits &limits;
    uid_t uid;
    QString blobDir;
    QJsonObject previous; // the last record's files: unchanged files are not read again
    QJsonObject files;
    qint64 bytes = 0;
    QString truncated; // "files", "bytes", "depth" or "directories": not the whole workspace
    int skippedNames = 0;
    int directories = 0;

    bool full()
    {
        if (files.size() < limits.maxFiles)
            return false;
        truncated = QStringLiteral("files");
        return true;
    }

    // The content of the regular file `name` in dirFd (stat'ed as `st`): its hash, stored.
    QString keep(int dirFd, const char *name, const struct stat &st, QString *why)
    {
        QByteArray data;
        {
            FsUidGuard guard(uid);
            HostFs::Fd fd(::openat(dirFd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
            if (!fd.isValid()) {
                *why = QStringLiteral("unreadable");
                return {};
            }
            struct stat now;
            if (::fstat(fd.get(), &now) != 0 || !S_ISREG(now.st_mode) || now.st_ino != st.st_ino
                || now.st_dev != st.st_dev) {
                *why = QStringLiteral("changed while read");
                return {};
            }
            data.resize(qsizetype(limits.maxFileBytes) + 1);
            qsizetype got = 0;
            while (got < data.size()) {
                const ssize_t n = ::read(fd.get(), data.data() + got, size_t(data.size() - got));
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0)
                    break;
                got += n;
            }
            data.truncate(got);
        }
        if (data.size() > limits.maxFileBytes) {
            *why = QStringLiteral("large");
            return {};
        }
        const QString hash = QString::fromLatin1(
            QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex());
        const QString path = blobDir + u'/' + hash;
        if (!QFileInfo::exists(path)) {
            QSaveFile out(path);
            if (!out.open(QIODevice::WriteOnly) || out.write(data) != data.size() || !out.commit()) {
                *why = QStringLiteral("not stored");
                return {};
            }
        }
        bytes += data.size();
        return hash;
    }

    void file(int dirFd, const char *name, const QString &path, const struct stat &st)
    {
        QJsonObject e{{kType, QStringLiteral("f")},        {kSize, double(st.st_size)},
                      {kMtime, double(nanos(st.st_mtim))}, {kCtime, double(nanos(st.st_ctim))},
                      {kInode, double(st.st_ino)},         {kMode, int(st.st_mode & 07777)}};
        const QJsonObject before = previous.value(path).toObject();
        const bool same = before.value(kType) == e.value(kType)
                          && before.value(kSize) == e.value(kSize)
                          && before.value(kMtime) == e.value(kMtime)
                          && before.value(kCtime) == e.value(kCtime)
                          && before.value(kInode) == e.value(kInode);
        const QString known = same ? before.value(kHash).toString() : QString();
        if (st.st_size > limits.maxFileBytes) {
            e.insert(kNoContent, QStringLiteral("large"));
        } else if (bytes + st.st_size > limits.maxBytes) {
            e.insert(kNoContent, QStringLiteral("over the record's size"));
            truncated = QStringLiteral("bytes");
        } else if (!known.isEmpty() && QFileInfo::exists(blobDir + u'/' + known)) {
            e.insert(kHash, known);
            bytes += st.st_size;
        } else {
            QString why;
            const QString hash = keep(dirFd, name, st, &why);
            if (hash.isEmpty())
                e.insert(kNoContent, why);
            else
                e.insert(kHash, hash);
        }
        files.insert(path, e);
    }

    void dir(int dirFd, const QString &rel, int depth)
    {
        if (++directories > limits.maxDirectories) {
            truncated = QStringLiteral("directories");
            return;
        }
        std::vector<std::string> names;
        {
            FsUidGuard guard(uid);
            const int fd = ::openat(dirFd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            DIR *d = fd < 0 ? nullptr : ::fdopendir(fd);
            if (!d) {
                if (fd >= 0)
                    ::close(fd);
                return;
            }
            while (const dirent *ent = ::readdir(d)) {
                const char *n = ent->d_name;
                if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
                    continue;
                names.emplace_back(n);
                if (names.size() > size_t(limits.maxFiles) * 2)
                    break;
            }
            ::closedir(d);
        }
        std::sort(names.begin(), names.end());
        for (const std::string &n : names) {
            if (full())
                return;
            const QString name = QString::fromUtf8(n.data(), qsizetype(n.size()));
            if (name.toUtf8() != QByteArrayView(n.data(), qsizetype(n.size()))) {
                ++skippedNames; // not UTF-8: it could not be named in an answer
                continue;
            }
            const QString path = rel.isEmpty() ? name : rel + u'/' + name;
            struct stat st;
            {
                FsUidGuard guard(uid);
                if (::fstatat(dirFd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                    continue;
            }
            if (S_ISDIR(st.st_mode)) {
                if (name == QLatin1String(".git"))
                    continue;
                if (depth >= limits.maxDepth) {
                    truncated = QStringLiteral("depth");
                    continue;
                }
                HostFs::Fd child;
                {
                    FsUidGuard guard(uid);
                    child = HostFs::Fd(::openat(dirFd, n.c_str(),
                                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                    struct stat now;
                    if (!child.isValid() || ::fstat(child.get(), &now) != 0
                        || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
                        continue;
                }
                dir(child.get(), path, depth + 1);
            } else if (S_ISLNK(st.st_mode)) {
                char target[4096];
                ssize_t len = -1;
                {
                    FsUidGuard guard(uid);
                    len = ::readlinkat(dirFd, n.c_str(), target, sizeof target);
                }
                if (len < 0 || len == ssize_t(sizeof target))
                    continue;
                files.insert(path, QJsonObject{{kType, QStringLiteral("l")},
                                               {kLink, QString::fromUtf8(target, len)},
                                               {kSize, double(len)}});
            } else if (S_ISREG(st.st_mode)) {
                file(dirFd, n.c_str(), path, st);
            }
        }
    }
};

bool sameEntry(const QJsonObject &a, const QJsonObject &b)
{
    if (a.value(kType) != b.value(kType))
        return false;
    if (a.value(kType).toString() == QLatin1String("l"))
        return a.value(kLink) == b.value(kLink);
    if (a.contains(kHash) && b.contains(kHash))
        return a.value(kHash) == b.value(kHash) && a.value(kMode) == b.value(kMode);
    return a.value(kSize) == b.value(kSize) && a.value(kMtime) == b.value(kMtime)
           && a.value(kCtime) == b.value(kCtime) && a.value(kInode) == b.value(kInode);
}

} // namespace

TurnSnapshots::TurnSnapshots(QString storeDir, uid_t uid, gid_t gid, Limits limits)
    : m_dir(std::move(storeDir))
    , m_uid(uid)
    , m_gid(gid)
    , m_limits(limits)
{}

bool TurnSnapshots::isValidRunId(const QString &runId)
{
    static const QRegularExpression re(QStringLiteral("^run_[0-9a-f]{16}$"));
    return re.match(runId).hasMatch();
}

QString TurnSnapshots::manifestPath(const QString &runId, Phase phase) const
{
    return m_dir + u'/' + runId
           + (phase == Phase::Before ? QStringLiteral(".before.json")
                                     : QStringLiteral(".after.json"));
}

QString TurnSnapshots::blobPath(const QByteArray &hash) const
{
    return m_dir + QStringLiteral("/blobs/") + QString::fromLatin1(hash);
}

Result<bool> TurnSnapshots::take(int workspaceFd, const QString &runId, Phase phase,
                                 const QString &cwd) const
{
    if (!isValidRunId(runId))
        return notFound(QStringLiteral("no run %1").arg(runId));
    if (!QDir().mkpath(m_dir + QStringLiteral("/blobs")))
        return storeError(QStringLiteral("cannot make %1").arg(m_dir));
    // The newest record tells which files are unchanged since (same size, times and inode: the
    // change time cannot be set back from inside the sandbox).
    QJsonObject previous;
    {
        QDir dir(m_dir, QStringLiteral("run_*.json"), QDir::Time, QDir::Files);
        const QStringList newest = dir.entryList();
        if (!newest.isEmpty())
            previous
                = readJson(m_dir + u'/' + newest.first()).value(QStringLiteral("files")).toObject();
    }
    Walk walk{m_limits, m_uid, m_dir + QStringLiteral("/blobs"), previous, {}, 0, {}, 0};
    walk.dir(workspaceFd, {}, 0);
    QJsonObject record{{QStringLiteral("files"), walk.files},
                       {QStringLiteral("bytes"), double(walk.bytes)},
                       {QStringLiteral("truncated"),
                        walk.truncated.isEmpty() ? QJsonValue() : QJsonValue(walk.truncated)},
                       {QStringLiteral("skippedNames"), walk.skippedNames},
                       {QStringLiteral("cwd"), cwd}};
    const QJsonObject git = gitInfo(workspaceFd, cwd, m_uid);
    record.insert(QStringLiteral("git"), git.isEmpty() ? QJsonValue() : QJsonValue(git));
    if (!writeJson(manifestPath(runId, phase), record))
        return storeError(QStringLiteral("cannot write the workspace's record in %1").arg(m_dir));
    prune();
    return true;
}

void TurnSnapshots::prune() const
{
    // The newest runs' records stay (both phases of a run go together), then contents no record
    // names go; while the contents are over their cap, the oldest run's records go too.
    QDir dir(m_dir, QStringLiteral("run_*.json"), QDir::Time, QDir::Files);
    QStringList runs;
    for (const QString &name : dir.entryList()) {
        const QString run = name.section(u'.', 0, 0);
        if (!runs.contains(run))
            runs.append(run);
    }
    const auto dropRun = [this](const QString &run) {
        QFile::remove(manifestPath(run, Phase::Before));
        QFile::remove(manifestPath(run, Phase::After));
    };
    while (runs.size() > m_limits.runsKept)
        dropRun(runs.takeLast());
    for (;;) {
        QSet<QString> used;
        for (const QString &run : std::as_const(runs)) {
            for (Phase phase : {Phase::Before, Phase::After}) {
                const QJsonObject files
                    = readJson(manifestPath(run, phase)).value(QStringLiteral("files")).toObject();
                for (auto it = files.begin(); it != files.end(); ++it) {
                    const QString h = it.value().toObject().value(kHash).toString();
                    if (!h.isEmpty())
                        used.insert(h);
                }
            }
        }
        qint64 total = 0;
        QDirIterator blobs(m_dir + QStringLiteral("/blobs"), QDir::Files);
        while (blobs.hasNext()) {
            const QFileInfo info = blobs.nextFileInfo();
            if (!used.contains(info.fileName()))
                QFile::remove(info.filePath());
            else
                total += info.size();
        }
        if (total <= m_limits.storeBytes || runs.size() <= 1)
            return;
        dropRun(runs.takeLast());
    }
}

Result<QJsonObject> TurnSnapshots::changes(const QString &runId) const
{
    bool haveBefore = false, haveAfter = false;
    const QJsonObject before = isValidRunId(runId)
                                   ? readJson(manifestPath(runId, Phase::Before), &haveBefore)
                                   : QJsonObject();
    if (!haveBefore)
        return notFound(QStringLiteral("no record of the workspace before run %1 (the run is "
                                       "older than the %2 runs kept, or it did not start)")
                            .arg(runId)
                            .arg(m_limits.runsKept));
    const QJsonObject after = readJson(manifestPath(runId, Phase::After), &haveAfter);
    QJsonObject answer{{QStringLiteral("runId"), runId},
                       {QStringLiteral("done"), haveAfter},
                       {QStringLiteral("source"), QStringLiteral("snapshot")}};
    const QJsonValue git = after.contains(QStringLiteral("git"))
                               ? after.value(QStringLiteral("git"))
                               : before.value(QStringLiteral("git"));
    answer.insert(QStringLiteral("git"), git.isObject() ? git : QJsonValue());
    QString truncated = before.value(QStringLiteral("truncated")).toString();
    if (truncated.isEmpty())
        truncated = after.value(QStringLiteral("truncated")).toString();
    answer.insert(QStringLiteral("truncated"),
                  truncated.isEmpty() ? QJsonValue() : QJsonValue(truncated));
    answer.insert(QStringLiteral("limits"),
                  QJsonObject{{QStringLiteral("maxFiles"), m_limits.maxFiles},
                              {QStringLiteral("maxBytes"), double(m_limits.maxBytes)},
                              {QStringLiteral("maxFileBytes"), double(m_limits.maxFileBytes)}});
    QJsonArray out;
    if (haveAfter) {
        const QJsonObject a = before.value(QStringLiteral("files")).toObject();
        const QJsonObject b = after.value(QStringLiteral("files")).toObject();
        QStringList paths = a.keys();
        for (const QString &k : b.keys()) {
            if (!a.contains(k))
                paths.append(k);
        }
        std::sort(paths.begin(), paths.end());
        qint64 diffBytes = 0;
        const auto content = [this](const QJsonObject &e, bool *ok) {
            const QString h = e.value(kHash).toString();
            *ok = !h.isEmpty();
            if (!*ok)
                return QByteArray();
            QFile f(blobPath(h.toLatin1()));
            *ok = f.open(QIODevice::ReadOnly);
            return *ok ? f.readAll() : QByteArray();
        };
        for (const QString &path : std::as_const(paths)) {
            const QJsonObject x = a.value(path).toObject();
            const QJsonObject y = b.value(path).toObject();
            if (!x.isEmpty() && !y.isEmpty() && sameEntry(x, y))
                continue;
            const QString kind = x.isEmpty()   ? QStringLiteral("add")
                                 : y.isEmpty() ? QStringLiteral("delete")
                                               : QStringLiteral("update");
            QJsonObject f{{QStringLiteral("path"), QString(kWorkspace + u'/' + path)},
                          {QStringLiteral("kind"), kind},
                          {QStringLiteral("sizeBefore"),
                           x.isEmpty() ? QJsonValue() : x.value(kSize)},
                          {QStringLiteral("sizeAfter"), y.isEmpty() ? QJsonValue() : y.value(kSize)},
                          // The run made it (it goes), or its content was kept.
                          {QStringLiteral("revertible"),
                           QJsonValue(x.isEmpty() || x.contains(kHash) || x.contains(kLink))}};
            if (x.value(kType).toString() == QLatin1String("l")
                || y.value(kType).toString() == QLatin1String("l")) {
                f.insert(QStringLiteral("link"), true);
                f.insert(QStringLiteral("linkBefore"), x.value(kLink));
                f.insert(QStringLiteral("linkAfter"), y.value(kLink));
                out.append(f);
                continue;
            }
            bool okBefore = x.isEmpty(), okAfter = y.isEmpty();
            const QByteArray textBefore = x.isEmpty() ? QByteArray() : content(x, &okBefore);
            const QByteArray textAfter = y.isEmpty() ? QByteArray() : content(y, &okAfter);
            QString omitted;
            if (!okBefore || !okAfter)
                omitted = QStringLiteral("large");
            else if (!isText(textBefore) || !isText(textAfter))
                omitted = QStringLiteral("binary");
            std::optional<LineDiff::Result> diff;
            if (omitted.isEmpty()) {
                diff = LineDiff::unified(textBefore, textAfter, path.toUtf8());
                if (!diff)
                    omitted = QStringLiteral("too many changes");
                else if (diff->text.size() > m_limits.diffBytesPerFile)
                    omitted = QStringLiteral("large");
                else if (diffBytes + diff->text.size() > m_limits.diffBytesPerAnswer)
                    omitted = QStringLiteral("answer full");
            }
            if (omitted.isEmpty()) {
                diffBytes += diff->text.size();
                f.insert(QStringLiteral("diff"), QString::fromUtf8(diff->text));
                f.insert(QStringLiteral("added"), diff->added);
                f.insert(QStringLiteral("removed"), diff->removed);
            } else {
                f.insert(QStringLiteral("diff"), QJsonValue());
                f.insert(QStringLiteral("diffOmitted"), omitted);
                if (diff) {
                    f.insert(QStringLiteral("added"), diff->added);
                    f.insert(QStringLiteral("removed"), diff->removed);
                }
            }
            f.insert(QStringLiteral("binary"), omitted == QLatin1String("binary"));
            out.append(f);
        }
    }
    answer.insert(QStringLiteral("files"), out);
    return answer;
}

Result<QJsonObject> TurnSnapshots::revert(int workspaceFd, const QString &runId,
                                          const QString &path) const
{
    const QString prefix = kWorkspace + u'/';
    QString rel = path.startsWith(prefix) ? path.mid(prefix.size()) : QString();
    const QStringList parts = rel.split(u'/', Qt::SkipEmptyParts);
    if (parts.isEmpty() || parts.contains(QStringLiteral(".."))
        || parts.contains(QStringLiteral(".")) || path.contains(QChar(0)))
        return Error{ErrorCode::PathNotAllowed,
                     QStringLiteral("%1 is not a file in /workspace").arg(path),
                     {}};
    rel = parts.join(u'/');
    bool haveBefore = false;
    const QJsonObject before = isValidRunId(runId)
                                   ? readJson(manifestPath(runId, Phase::Before), &haveBefore)
                                   : QJsonObject();
    if (!haveBefore)
        return notFound(QStringLiteral("no record of the workspace before run %1").arg(runId));
    const QJsonObject e = before.value(QStringLiteral("files")).toObject().value(rel).toObject();
    QByteArray data;
    if (!e.isEmpty() && e.value(kType).toString() == QLatin1String("f")) {
        const QString h = e.value(kHash).toString();
        QFile blob(blobPath(h.toLatin1()));
        if (h.isEmpty() || !blob.open(QIODevice::ReadOnly))
            return Error{ErrorCode::PayloadTooLarge,
                         QStringLiteral("%1 cannot be reverted: its content before the run was "
                                        "not kept (%2)")
                             .arg(path, e.value(kNoContent).toString(QStringLiteral("large"))),
                         {}};
        data = blob.readAll();
    }
    const QByteArray parent = QFile::encodeName(parts.mid(0, parts.size() - 1).join(u'/'));
    const QByteArray name = QFile::encodeName(parts.last());
    const auto fail = [&path](int err) {
        return Error{ErrorCode::FileError,
                     QStringLiteral("cannot revert %1: %2")
                         .arg(path, err == -ELOOP ? QStringLiteral("a symbolic link is in the way")
                                                  : HostFs::errorText(err)),
                     QJsonObject{{QStringLiteral("errno"), -err}}};
    };
    FsUidGuard guard(m_uid);
    if (e.isEmpty()) {
        // The run made it: it goes (a directory the run made stays, maybe empty).
        HostFs::Fd dir(HostFs::openBeneath(workspaceFd, parent, O_RDONLY | O_DIRECTORY));
        if (!dir.isValid() && dir.get() != -ENOENT)
            return fail(dir.get());
        if (dir.isValid() && ::unlinkat(dir.get(), name.constData(), 0) != 0 && errno != ENOENT)
            return fail(-errno);
        return QJsonObject{{QStringLiteral("path"), path},
                           {QStringLiteral("reverted"), QStringLiteral("deleted")}};
    }
    HostFs::Fd dir(HostFs::ensureDirs(workspaceFd, parent, 0755, m_uid, m_gid));
    if (!dir.isValid())
        return fail(dir.get());
    if (e.value(kType).toString() == QLatin1String("l")) {
        if (::unlinkat(dir.get(), name.constData(), 0) != 0 && errno != ENOENT)
            return fail(-errno);
        if (::symlinkat(e.value(kLink).toString().toUtf8().constData(), dir.get(), name.constData())
            != 0)
            return fail(-errno);
    } else {
        const int r = HostFs::writeFileAt(dir.get(), name, data, mode_t(e.value(kMode).toInt(0644)),
                                          m_uid, m_gid);
        if (r < 0)
            return fail(r);
    }
    return QJsonObject{{QStringLiteral("path"), path},
                       {QStringLiteral("reverted"), QStringLiteral("restored")}};
}

} // namespace Sandbox::Engine
