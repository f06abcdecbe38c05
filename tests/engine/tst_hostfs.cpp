// HostFs, the engine's fd-relative way of touching trees a sandbox writes: nothing is followed
// through a link, nothing outside the tree changes, deep and odd trees go whole.
#include "runtime/hostfs.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace Sandbox::Engine;

namespace {

QByteArray enc(const QString &s)
{
    return QFile::encodeName(s);
}

bool writeText(const QString &path, const QByteArray &text)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
}

QByteArray readText(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class tst_HostFs : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void removeTreeNeverFollowsLinks();
    void removeTreeOfADeepTree();
    void removeTreeOfOddFiles();
    void removeTreeStopsAtAMountPoint();
    void openBeneathRefusesLinksAndEscapes();
    void ensureDirsRefusesALinkOnTheWay();
    void writeFileAtReplacesALink();
    void copyTreeIntoCopiesLinksAsLinks();
    void moveEntries();
};

void tst_HostFs::removeTreeNeverFollowsLinks()
{
    QTemporaryDir tmp;
    const QString outside = tmp.path() + QStringLiteral("/outside");
    QVERIFY(QDir().mkpath(outside + QStringLiteral("/sub")));
    QVERIFY(writeText(outside + QStringLiteral("/sub/precious"), "keep me"));
    const QString tree = tmp.path() + QStringLiteral("/tree");
    QVERIFY(QDir().mkpath(tree + QStringLiteral("/a/b")));
    QVERIFY(QFile::link(outside, tree + QStringLiteral("/link-to-dir")));
    QVERIFY(QFile::link(outside + QStringLiteral("/sub/precious"),
                        tree + QStringLiteral("/a/link-to-file")));
    QVERIFY(QFile::link(QStringLiteral("../../../outside"), tree + QStringLiteral("/a/b/rel")));

    HostFs::Fd parent(HostFs::openOwnDir(tmp.path()));
    QVERIFY(parent.isValid());
    QCOMPARE(HostFs::removeTree(parent.get(), "tree"), 0);
    QVERIFY(!QFileInfo::exists(tree));
    QCOMPARE(readText(outside + QStringLiteral("/sub/precious")), QByteArray("keep me"));

    // The tree itself a link: the link goes, its target stays.
    QVERIFY(QFile::link(outside, tree));
    QCOMPARE(HostFs::removeTree(parent.get(), "tree"), 0);
    QVERIFY(!QFileInfo(tree).isSymLink());
    QCOMPARE(readText(outside + QStringLiteral("/sub/precious")), QByteArray("keep me"));
}

void tst_HostFs::removeTreeOfADeepTree()
{
    QTemporaryDir tmp;
    HostFs::Fd parent(HostFs::openOwnDir(tmp.path()));
    // Deeper than any path a path-based walk could name (PATH_MAX), with files at every level.
    HostFs::Fd dir(::open(enc(tmp.path()).constData(), O_RDONLY | O_DIRECTORY));
    QVERIFY(::mkdirat(dir.get(), "deep", 0700) == 0);
    dir = HostFs::Fd(::openat(dir.get(), "deep", O_RDONLY | O_DIRECTORY));
    const QByteArray name(200, 'd');
    for (int i = 0; i < 300; ++i) {
        QVERIFY(::mkdirat(dir.get(), name.constData(), 0700) == 0);
        ::close(::openat(dir.get(), "f", O_CREAT | O_WRONLY, 0600));
        QVERIFY(::mkdirat(dir.get(), "sibling", 0700) == 0);
        dir = HostFs::Fd(::openat(dir.get(), name.constData(), O_RDONLY | O_DIRECTORY));
        QVERIFY(dir.isValid());
    }
    dir.reset();
    QCOMPARE(HostFs::removeTree(parent.get(), "deep"), 0);
    QVERIFY(!QFileInfo::exists(tmp.path() + QStringLiteral("/deep")));
}

void tst_HostFs::removeTreeOfOddFiles()
{
    QTemporaryDir tmp;
    const QString tree = tmp.path() + QStringLiteral("/tree");
    QVERIFY(QDir().mkpath(tree + QStringLiteral("/locked")));
    QVERIFY(::mkfifo(enc(tree + QStringLiteral("/fifo")).constData(), 0600) == 0);
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const QByteArray sock = enc(tree + QStringLiteral("/sock"));
    memcpy(addr.sun_path, sock.constData(), size_t(sock.size()) + 1);
    QVERIFY(::bind(s, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0);
    ::close(s);
    QVERIFY(writeText(tree + QStringLiteral("/locked/f"), "x"));
    // A directory without permissions: root deletes it all the same.
    QVERIFY(::chmod(enc(tree + QStringLiteral("/locked")).constData(), 0) == 0);
    if (::geteuid() != 0)
        ::chmod(enc(tree + QStringLiteral("/locked")).constData(), 0700);
    HostFs::Fd parent(HostFs::openOwnDir(tmp.path()));
    QCOMPARE(HostFs::removeTree(parent.get(), "tree"), 0);
    QVERIFY(!QFileInfo::exists(tree));
}

void tst_HostFs::removeTreeStopsAtAMountPoint()
{
    if (::geteuid() != 0)
        QSKIP("mounting needs root");
    QTemporaryDir tmp;
    const QString tree = tmp.path() + QStringLiteral("/tree");
    QVERIFY(QDir().mkpath(tree + QStringLiteral("/mnt")));
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/other")));
    QVERIFY(writeText(tmp.path() + QStringLiteral("/other/precious"), "keep me"));
    QVERIFY(::mount("tmpfs", enc(tree + QStringLiteral("/mnt")).constData(), "tmpfs", 0, nullptr)
            == 0);
    QVERIFY(writeText(tree + QStringLiteral("/mnt/inside"), "on another file system"));
    HostFs::Fd parent(HostFs::openOwnDir(tmp.path()));
    QCOMPARE(HostFs::removeTree(parent.get(), "tree"), -EBUSY);
    QCOMPARE(readText(tree + QStringLiteral("/mnt/inside")), QByteArray("on another file system"));
    QVERIFY(::umount2(enc(tree + QStringLiteral("/mnt")).constData(), MNT_DETACH) == 0);
    QCOMPARE(HostFs::removeTree(parent.get(), "tree"), 0);
    QCOMPARE(readText(tmp.path() + QStringLiteral("/other/precious")), QByteArray("keep me"));
}

void tst_HostFs::openBeneathRefusesLinksAndEscapes()
{
    QTemporaryDir tmp;
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/root/a")));
    QVERIFY(QFile::link(QStringLiteral("a"), tmp.path() + QStringLiteral("/root/inside")));
    QVERIFY(QFile::link(tmp.path(), tmp.path() + QStringLiteral("/root/out")));
    HostFs::Fd root(HostFs::openOwnDir(tmp.path() + QStringLiteral("/root")));
    HostFs::Fd a(HostFs::openBeneath(root.get(), "a", O_RDONLY | O_DIRECTORY));
    QVERIFY(a.isValid());
    QCOMPARE(HostFs::openBeneath(root.get(), "inside", O_RDONLY | O_DIRECTORY), -ELOOP);
    QCOMPARE(HostFs::openBeneath(root.get(), "out/root", O_RDONLY | O_DIRECTORY), -ELOOP);
    QCOMPARE(HostFs::openBeneath(root.get(), "../root", O_RDONLY | O_DIRECTORY), -EXDEV);
    QCOMPARE(HostFs::openBeneath(root.get(), "/etc", O_RDONLY | O_DIRECTORY), -EXDEV);
}

void tst_HostFs::ensureDirsRefusesALinkOnTheWay()
{
    QTemporaryDir tmp;
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/home")));
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/victim")));
    QVERIFY(QFile::link(tmp.path() + QStringLiteral("/victim"),
                        tmp.path() + QStringLiteral("/home/.config")));
    HostFs::Fd home(HostFs::openOwnDir(tmp.path() + QStringLiteral("/home")));
    QCOMPARE(HostFs::ensureDirs(home.get(), ".config/sandbox", 0700, ::geteuid(), ::getegid()),
             -ELOOP);
    QVERIFY(!QFileInfo::exists(tmp.path() + QStringLiteral("/victim/sandbox")));
    HostFs::Fd made(HostFs::ensureDirs(home.get(), ".codex/a/b", 0700, ::geteuid(), ::getegid()));
    QVERIFY(made.isValid());
    QVERIFY(QFileInfo(tmp.path() + QStringLiteral("/home/.codex/a/b")).isDir());
}

void tst_HostFs::writeFileAtReplacesALink()
{
    QTemporaryDir tmp;
    QVERIFY(writeText(tmp.path() + QStringLiteral("/precious"), "keep me"));
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/dir")));
    QVERIFY(QFile::link(tmp.path() + QStringLiteral("/precious"),
                        tmp.path() + QStringLiteral("/dir/file")));
    HostFs::Fd dir(HostFs::openOwnDir(tmp.path() + QStringLiteral("/dir")));
    QCOMPARE(HostFs::writeFileAt(dir.get(), "file", "new", 0600, ::geteuid(), ::getegid()), 0);
    QCOMPARE(readText(tmp.path() + QStringLiteral("/precious")), QByteArray("keep me"));
    QVERIFY(!QFileInfo(tmp.path() + QStringLiteral("/dir/file")).isSymLink());
    QCOMPARE(readText(tmp.path() + QStringLiteral("/dir/file")), QByteArray("new"));
    QCOMPARE(QDir(tmp.path() + QStringLiteral("/dir"))
                 .entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot)
                 .size(),
             1);
}

void tst_HostFs::copyTreeIntoCopiesLinksAsLinks()
{
    QTemporaryDir tmp;
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/src/a")));
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/dst")));
    QVERIFY(writeText(tmp.path() + QStringLiteral("/src/a/f"), "data"));
    QVERIFY(QFile::link(QStringLiteral("/etc/shadow"), tmp.path() + QStringLiteral("/src/a/l")));
    QVERIFY(::mkfifo(enc(tmp.path() + QStringLiteral("/src/fifo")).constData(), 0600) == 0);
    HostFs::Fd root(HostFs::openOwnDir(tmp.path()));
    HostFs::Fd dst(HostFs::openOwnDir(tmp.path() + QStringLiteral("/dst")));
    QCOMPARE(HostFs::copyTreeInto(root.get(), "src", dst.get(), ::geteuid(), ::getegid()), 0);
    QCOMPARE(readText(tmp.path() + QStringLiteral("/dst/a/f")), QByteArray("data"));
    QCOMPARE(QFileInfo(tmp.path() + QStringLiteral("/dst/a/l")).symLinkTarget(),
             QStringLiteral("/etc/shadow"));
    QVERIFY(!QFileInfo::exists(tmp.path() + QStringLiteral("/dst/fifo")));
}

void tst_HostFs::moveEntries()
{
    QTemporaryDir tmp;
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/src/keep")));
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/src/d")));
    QVERIFY(QDir().mkpath(tmp.path() + QStringLiteral("/dst")));
    QVERIFY(writeText(tmp.path() + QStringLiteral("/src/f"), "f"));
    QVERIFY(QFile::link(QStringLiteral("/nowhere"), tmp.path() + QStringLiteral("/src/l")));
    HostFs::Fd src(HostFs::openOwnDir(tmp.path() + QStringLiteral("/src")));
    HostFs::Fd dst(HostFs::openOwnDir(tmp.path() + QStringLiteral("/dst")));
    QCOMPARE(HostFs::moveEntries(src.get(), dst.get(), "keep"), 0);
    QCOMPARE(QDir(tmp.path() + QStringLiteral("/src"))
                 .entryList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("keep")});
    QCOMPARE(QDir(tmp.path() + QStringLiteral("/dst"))
                 .entryList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot),
             (QStringList{QStringLiteral("d"), QStringLiteral("f"), QStringLiteral("l")}));
}

QTEST_GUILESS_MAIN(tst_HostFs)
#include "tst_hostfs.moc"
