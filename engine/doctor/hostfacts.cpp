#include "hostfacts.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>

#include <sys/stat.h>

namespace Sandbox::Engine {

namespace {

// mountinfo escapes space, tab, newline and backslash as octal.
QString unescapeMountField(const QByteArray &field)
{
    QByteArray out;
    out.reserve(field.size());
    for (qsizetype i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size()) {
            bool ok = false;
            const int c = field.mid(i + 1, 3).toInt(&ok, 8);
            if (ok && c < 256) {
                out.append(char(c));
                i += 3;
                continue;
            }
        }
        out.append(field[i]);
    }
    return QString::fromUtf8(out);
}

QString unquote(QString v)
{
    v = v.trimmed();
    if (v.size() >= 2 && (v.startsWith(u'"') || v.startsWith(u'\'')) && v.endsWith(v.front()))
        v = v.mid(1, v.size() - 2);
    return v;
}

} // namespace

HostRoot::HostRoot(QString root)
    : m_root(QDir::cleanPath(root.isEmpty() ? QStringLiteral("/") : root))
{}

QString HostRoot::path(const QString &absolute) const
{
    if (isLive())
        return absolute;
    return m_root + (absolute.startsWith(u'/') ? absolute : u'/' + absolute);
}

bool HostRoot::exists(const QString &absolute) const
{
    struct stat st;
    return ::lstat(QFile::encodeName(path(absolute)).constData(), &st) == 0
           || QFile::exists(path(absolute));
}

std::optional<QByteArray> HostRoot::read(const QString &absolute, qsizetype max) const
{
    QFile f(path(absolute));
    if (!f.open(QIODevice::ReadOnly))
        return std::nullopt;
    QByteArray data = f.read(max);
    if (data.isNull() && f.error() != QFile::NoError)
        return std::nullopt;
    return data.isNull() ? QByteArray("") : data;
}

std::optional<QString> HostRoot::readLine(const QString &absolute) const
{
    const auto data = read(absolute, 64 * 1024);
    if (!data)
        return std::nullopt;
    return QString::fromUtf8(
               data->left(data->indexOf('\n') < 0 ? data->size() : data->indexOf('\n')))
        .trimmed();
}

std::optional<qint64> HostRoot::sysctl(const QString &name) const
{
    const auto line = readLine(QStringLiteral("/proc/sys/") + QString(name).replace(u'.', u'/'));
    if (!line)
        return std::nullopt;
    bool ok = false;
    const qint64 v = line->toLongLong(&ok);
    return ok ? std::optional<qint64>(v) : std::nullopt;
}

std::optional<uid_t> HostRoot::owner(const QString &absolute) const
{
    struct stat st;
    if (::lstat(QFile::encodeName(path(absolute)).constData(), &st) != 0)
        return std::nullopt;
    return st.st_uid;
}

OsRelease OsRelease::read(const HostRoot &root)
{
    OsRelease os;
    auto data = root.read(QStringLiteral("/etc/os-release"), 64 * 1024);
    if (!data)
        data = root.read(QStringLiteral("/usr/lib/os-release"), 64 * 1024);
    if (!data)
        return os;
    for (const QByteArray &raw : data->split('\n')) {
        const QString line = QString::fromUtf8(raw).trimmed();
        const qsizetype eq = line.indexOf(u'=');
        if (line.startsWith(u'#') || eq <= 0)
            continue;
        const QString key = line.left(eq);
        const QString value = unquote(line.mid(eq + 1));
        if (key == QLatin1String("ID"))
            os.id = value;
        else if (key == QLatin1String("ID_LIKE"))
            os.idLike = value.split(u' ', Qt::SkipEmptyParts);
        else if (key == QLatin1String("VERSION_ID"))
            os.versionId = value;
        else if (key == QLatin1String("PRETTY_NAME"))
            os.prettyName = value;
    }
    return os;
}

KernelRelease KernelRelease::read(const HostRoot &root)
{
    KernelRelease k;
    k.release = root.readLine(QStringLiteral("/proc/sys/kernel/osrelease")).value_or(QString());
    const Version v = Version::parse(k.release);
    if (v.isValid()) {
        k.major = v.major;
        k.minor = v.minor;
    }
    return k;
}

CgroupLayout CgroupLayout::read(const HostRoot &root, const QString &procSelf)
{
    CgroupLayout l;
    QString secondaryUnified; // a cgroup2 mount that is not at /sys/fs/cgroup (hybrid mode)
    const QByteArray mountinfo
        = root.read(procSelf + QStringLiteral("/mountinfo")).value_or(QByteArray());
    for (const QByteArray &line : mountinfo.split('\n')) {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
        const QList<QByteArray> f = line.split(' ');
        const qsizetype dash = f.indexOf("-");
        if (dash < 6 || dash + 3 >= f.size())
            continue;
        const QString mountPoint = unescapeMountField(f[4]);
        const QByteArray &fsType = f[dash + 1];
        const QByteArray &superOptions = f[dash + 3];
        if (fsType == "cgroup2") {
            if (mountPoint == QLatin1String("/sys/fs/cgroup"))
                l.unifiedMount = mountPoint;
            else if (secondaryUnified.isEmpty())
                secondaryUnified = mountPoint;
        } else if (fsType == "cgroup") {
            for (const QByteArray &opt : superOptions.split(',')) {
                const QString o = QString::fromLatin1(opt);
                if (o == QLatin1String("rw") || o == QLatin1String("ro") || o.contains(u'='))
                    continue;
                if (!l.v1Mounts.contains(o))
                    l.v1Mounts.insert(o, mountPoint);
            }
        }
    }
    if (!l.unifiedMount.isEmpty())
        l.mode = Mode::V2;
    else if (!l.v1Mounts.isEmpty())
        l.mode = secondaryUnified.isEmpty() ? Mode::V1 : Mode::Hybrid;
    else if (!secondaryUnified.isEmpty())
        l.mode = Mode::V2;
    if (l.unifiedMount.isEmpty())
        l.unifiedMount = secondaryUnified;

    const QByteArray cgroups
        = root.read(procSelf + QStringLiteral("/cgroup")).value_or(QByteArray());
    for (const QByteArray &line : cgroups.split('\n')) {
        // ID:CONTROLLERS:PATH, where PATH may itself contain ':'
        const qsizetype a = line.indexOf(':');
        const qsizetype b = a < 0 ? -1 : line.indexOf(':', a + 1);
        if (b < 0)
            continue;
        const QByteArray controllers = line.mid(a + 1, b - a - 1);
        const QString path = QString::fromUtf8(line.mid(b + 1)).trimmed();
        if (line.left(a) == "0" && controllers.isEmpty()) {
            l.ownPath = path;
            continue;
        }
        for (const QByteArray &c : controllers.split(','))
            if (!c.isEmpty() && !c.contains('='))
                l.v1OwnPaths.insert(QString::fromLatin1(c), path);
    }
    return l;
}

QString CgroupLayout::unifiedDir(const QString &cgroupPath) const
{
    if (unifiedMount.isEmpty())
        return {};
    return QDir::cleanPath(unifiedMount + u'/' + cgroupPath);
}

QStringList CgroupLayout::controllers(const HostRoot &root, const QString &dir)
{
    const auto line = root.readLine(dir + QStringLiteral("/cgroup.controllers"));
    return line ? line->split(u' ', Qt::SkipEmptyParts) : QStringList();
}

bool CgroupLayout::hasV1Limits() const
{
    for (const QString &c : limitControllers())
        if (!v1Mounts.contains(c))
            return false;
    return true;
}

QString CgroupLayout::modeName(Mode mode)
{
    switch (mode) {
    case Mode::None:
        return QStringLiteral("none");
    case Mode::V1:
        return QStringLiteral("v1");
    case Mode::Hybrid:
        return QStringLiteral("hybrid (v1 controllers)");
    case Mode::V2:
        return QStringLiteral("v2");
    }
    return {};
}

QStringList limitControllers()
{
    return {QStringLiteral("memory"), QStringLiteral("pids"), QStringLiteral("cpu")};
}

AppArmorFacts AppArmorFacts::read(const HostRoot &root)
{
    AppArmorFacts a;
    a.enabled = root.readLine(QStringLiteral("/sys/module/apparmor/parameters/enabled"))
                    .value_or(QString())
                    .startsWith(u'Y');
    const QString fs = QStringLiteral("/sys/kernel/security/apparmor");
    a.mediatesUserns = root.exists(fs + QStringLiteral("/features/namespaces/userns_create"));
    a.restrictUnprivilegedUserns = root.sysctl(
        QStringLiteral("kernel.apparmor_restrict_unprivileged_userns"));
    if (const auto profiles = root.read(fs + QStringLiteral("/profiles"))) {
        QStringList names;
        // "NAME (MODE)" per line
        for (const QByteArray &line : profiles->split('\n')) {
            const QString l = QString::fromUtf8(line).trimmed();
            if (l.isEmpty())
                continue;
            const qsizetype paren = l.lastIndexOf(QStringLiteral(" ("));
            names.append(paren > 0 ? l.left(paren) : l);
        }
        a.loadedProfiles = names;
    }
    return a;
}

Version Version::parse(const QString &text)
{
    static const QRegularExpression re(QStringLiteral("(\\d+)\\.(\\d+)(?:\\.(\\d+))?"));
    const QRegularExpressionMatch m = re.match(text);
    Version v;
    if (!m.hasMatch())
        return v;
    v.major = m.captured(1).toInt();
    v.minor = m.captured(2).toInt();
    v.patch = m.captured(3).isEmpty() ? 0 : m.captured(3).toInt();
    return v;
}

bool Version::atLeast(int maj, int min, int pat) const
{
    if (major != maj)
        return major > maj;
    if (minor != min)
        return minor > min;
    return patch >= pat;
}

QString Version::toString() const
{
    return isValid() ? QStringLiteral("%1.%2.%3").arg(major).arg(minor).arg(patch) : QString();
}

} // namespace Sandbox::Engine
