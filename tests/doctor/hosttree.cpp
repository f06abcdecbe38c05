#include "hosttree.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>

#include <sys/stat.h>
#include <unistd.h>

HostTree::HostTree(const QStringList &fixtures)
{
    if (!m_dir.isValid()) {
        m_error = QStringLiteral("no temporary directory");
        return;
    }
    for (const QString &f : fixtures) {
        if (!load(f))
            return;
    }
}

bool HostTree::write(const QString &absolute, const QByteArray &content, int mode)
{
    const QString target = path(absolute);
    QDir().mkpath(QFileInfo(target).path());
    QFile f(target);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(content) != content.size()) {
        m_error = QStringLiteral("cannot write %1").arg(target);
        return false;
    }
    f.close();
    return ::chmod(QFile::encodeName(target).constData(), mode_t(mode)) == 0;
}

bool HostTree::remove(const QString &absolute)
{
    const QFileInfo info(path(absolute));
    if (info.isDir() && !info.isSymLink())
        return QDir(info.filePath()).removeRecursively();
    return QFile::remove(info.filePath());
}

bool HostTree::chown(const QString &absolute, uid_t uid)
{
    const QString top = path(absolute);
    if (::lchown(QFile::encodeName(top).constData(), uid, gid_t(-1)) != 0)
        return false;
    QDirIterator it(top, QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        if (::lchown(QFile::encodeName(it.next()).constData(), uid, gid_t(-1)) != 0)
            return false;
    }
    return true;
}

bool HostTree::load(const QString &fixture)
{
    QFile f(QStringLiteral(SANDBOX_SOURCE_DIR "/tests/doctor/trees/") + fixture
            + QStringLiteral(".tree"));
    if (!f.open(QIODevice::ReadOnly)) {
        m_error = QStringLiteral("cannot read fixture %1").arg(f.fileName());
        return false;
    }
    QString current;
    int mode = 0644;
    bool isDir = false;
    QByteArray content;
    auto flush = [&] {
        if (current.isEmpty())
            return true;
        if (isDir)
            return QDir().mkpath(path(current));
        return write(current, content, mode);
    };
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("== ")) {
            if (!flush())
                return false;
            const QStringList fields
                = QString::fromUtf8(line.mid(3)).split(u' ', Qt::SkipEmptyParts);
            current = fields.value(0);
            mode = 0644;
            isDir = false;
            content.clear();
            for (const QString &opt : fields.mid(1)) {
                if (opt.startsWith(QLatin1String("mode=")))
                    mode = opt.mid(5).toInt(nullptr, 8);
                else if (opt == QLatin1String("dir"))
                    isDir = true;
            }
            if (current.endsWith(u'/'))
                isDir = true;
            continue;
        }
        if (!current.isEmpty())
            content += line + '\n';
    }
    // Empty entries are empty files; the trailing newline of the last line stays out.
    if (content == "\n")
        content.clear();
    return flush();
}
