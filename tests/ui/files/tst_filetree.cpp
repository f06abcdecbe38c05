// The file tree against a real sandbox: lazy listing one directory at a time (under
// QAbstractItemModelTester), refresh as a diff, and the page's operations — create, rename,
// delete, upload, download, and moves and uploads by drag and drop.
#include <uitest.h>

#include <files/filespage.h>
#include <files/filetransfer.h>
#include <files/filetreemodel.h>
#include <files/filewatch.h>

#include <QAbstractItemModelTester>
#include <QCryptographicHash>
#include <QMimeData>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QUrl>

using namespace Sandbox;
using namespace Sandbox::Ui;

namespace {
QStringList childNames(const FileTreeModel &m, const QModelIndex &parent = {})
{
    QStringList out;
    for (int r = 0; r < m.rowCount(parent); ++r)
        out << m.index(r, 0, parent).data(FileTreeModel::PathRole).toString().section(u'/', -1);
    return out;
}
} // namespace

class TestFileTree final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
        const auto s = m_engine.createAgent(QStringLiteral("files"));
        QVERIFY(s);
        m_sandbox = s.value();
        // A small tree: directories first, then files, case-insensitively by name.
        const auto r
            = m_engine.exec(m_sandbox.id,
                            QStringLiteral(
                                "mkdir -p src/lib docs empty && echo 'print(1)' > src/main.py && "
                                "echo x > src/lib/util.py && echo readme > README.md && "
                                "echo b > b.txt && echo A > A.txt"));
        QVERIFY(r && r->exitCode == 0);
    }

    void listsOneDirectoryPerRequest()
    {
        FileTreeModel model(m_engine.client(), m_sandbox.id);
        QSignalSpy loaded(&model, &FileTreeModel::directoryLoaded);
        QVERIFY(model.canFetchMore({}));
        model.fetchMore({});
        QVERIFY(loaded.wait(10000));
        QCOMPARE(loaded.first().first().toString(), QStringLiteral("/workspace"));
        QCOMPARE(childNames(model),
                 (QStringList{QStringLiteral("docs"), QStringLiteral("empty"),
                              QStringLiteral("src"), QStringLiteral("A.txt"),
                              QStringLiteral("b.txt"), QStringLiteral("README.md")}));
        // Subdirectories are not listed until asked for.
        const QModelIndex src = model.indexOf(QStringLiteral("/workspace/src"));
        QVERIFY(src.isValid());
        QVERIFY(model.hasChildren(src));
        QCOMPARE(model.rowCount(src), 0);
        QVERIFY(model.canFetchMore(src));
        QVERIFY(!loaded.wait(200)); // nothing more is listed meanwhile
        QCOMPARE(loaded.size(), 1);
        model.fetchMore(src);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(loaded.size(), 2);
        QCOMPARE(childNames(model, src),
                 (QStringList{QStringLiteral("lib"), QStringLiteral("main.py")}));
        QVERIFY(!model.canFetchMore(src));
        // An empty directory shows no expander once listed.
        const QModelIndex empty = model.indexOf(QStringLiteral("/workspace/empty"));
        model.fetchMore(empty);
        QVERIFY(loaded.wait(10000));
        QVERIFY(!model.hasChildren(empty));
        // Sizes and types.
        const QModelIndex mainPy = model.indexOf(QStringLiteral("/workspace/src/main.py"));
        QCOMPARE(mainPy.data(FileTreeModel::SizeRole).toLongLong(), 9);
        QVERIFY(!mainPy.data(FileTreeModel::IsDirectoryRole).toBool());
        QVERIFY(model.isDirectory(src));
    }

    // The tester fetches every directory it meets and checks each insertion on the way.
    void passesTheModelTester()
    {
        FileTreeModel model(m_engine.client(), m_sandbox.id);
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        if (model.canFetchMore({}))
            model.fetchMore({});
        QVERIFY(UiTest::waitFor(
            [&] {
                return !model.isLoading()
                       && model.indexOf(QStringLiteral("/workspace/src/lib/util.py")).isValid();
            },
            20000));
        QCOMPARE(childNames(model, model.indexOf(QStringLiteral("/workspace/src/lib"))),
                 QStringList{QStringLiteral("util.py")});
    }

    void refreshAppliesOnlyTheDifference()
    {
        FileTreeModel model(m_engine.client(), m_sandbox.id);
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&model, &FileTreeModel::directoryLoaded);
        model.fetchMore({});
        QVERIFY(loaded.wait(10000));
        const QModelIndex src = model.indexOf(QStringLiteral("/workspace/src"));
        model.fetchMore(src);
        // directoryLoaded also comes for the tester's own fetches: wait for src itself.
        QVERIFY(UiTest::waitFor(
            [&] { return model.indexOf(QStringLiteral("/workspace/src/main.py")).isValid(); },
            10000));
        const QPersistentModelIndex keep(model.indexOf(QStringLiteral("/workspace/src/main.py")));

        QVERIFY(m_engine.exec(
            m_sandbox.id,
            QStringLiteral("rm b.txt && touch new.txt && mkdir aaa && echo more >> src/main.py")));
        QVERIFY(
            UiTest::waitFor([&] { return !model.isLoading(); }, 20000)); // the tester's own fetches
        QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.refresh({});
        QVERIFY(loaded.wait(10000));
        model.refresh(src);
        QVERIFY(loaded.wait(10000));
        QVERIFY(UiTest::waitFor([&] { return !model.isLoading(); }, 20000));
        QCOMPARE(reset.size(), 0);
        // b.txt out; aaa and new.txt in (the tester lists the new, empty aaa/ too: nothing inserted).
        QCOMPARE(removed.size(), 1);
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(childNames(model), (QStringList{QStringLiteral("aaa"), QStringLiteral("docs"),
                                                 QStringLiteral("empty"), QStringLiteral("src"),
                                                 QStringLiteral("A.txt"), QStringLiteral("new.txt"),
                                                 QStringLiteral("README.md")}));
        QVERIFY(keep.isValid()); // the loaded subtree survived
        QCOMPARE(keep.data(FileTreeModel::SizeRole).toLongLong(), 14);
        QVERIFY(m_engine.exec(m_sandbox.id, QStringLiteral("rm -r aaa new.txt && echo b > b.txt && "
                                                           "printf 'print(1)\\n' > src/main.py")));
    }

    void anErrorIsReportedNotRetriedForever()
    {
        FileTreeModel model(m_engine.client(), m_sandbox.id, nullptr,
                            QStringLiteral("/workspace/missing"));
        QSignalSpy error(&model, &FileTreeModel::errorOccurred);
        model.fetchMore({});
        QVERIFY(error.wait(10000));
        QVERIFY(error.first().first().toString().contains(QStringLiteral("/workspace/missing")));
        QVERIFY(!model.canFetchMore({}));
    }

    void pageCreatesRenamesAndDeletes()
    {
        FilesPage page(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
        page.resize(300, 500);
        page.show();
        FileTreeModel *model = page.model();
        QVERIFY(UiTest::waitFor([&] { return model->rowCount() > 0; }, 10000));

        // New folder and new file go into the current directory.
        page.view()->setCurrentIndex(model->indexOf(QStringLiteral("/workspace/docs")));
        page.createFolder(QStringLiteral("/workspace/docs"), QStringLiteral("guides"));
        QVERIFY(UiTest::waitFor([&] { return exists(QStringLiteral("/workspace/docs/guides")); }));
        page.createFile(QStringLiteral("/workspace/docs"), QStringLiteral("notes.md"));
        QVERIFY(UiTest::waitFor([&] { return exists(QStringLiteral("/workspace/docs/notes.md")); }));
        // The tree shows them without a manual refresh.
        page.view()->expand(model->indexOf(QStringLiteral("/workspace/docs")));
        QVERIFY(UiTest::waitFor(
            [&] { return model->indexOf(QStringLiteral("/workspace/docs/notes.md")).isValid(); }));
        QVERIFY(model->indexOf(QStringLiteral("/workspace/docs/guides")).isValid());

        // Moving by drag and drop: docs/notes.md onto src/.
        auto *mime = model->mimeData({model->indexOf(QStringLiteral("/workspace/docs/notes.md"))});
        QVERIFY(mime);
        QVERIFY(model->dropMimeData(mime, Qt::MoveAction, -1, -1,
                                    model->indexOf(QStringLiteral("/workspace/src"))));
        delete mime;
        QVERIFY(UiTest::waitFor([&] { return exists(QStringLiteral("/workspace/src/notes.md")); }));
        QVERIFY(!exists(QStringLiteral("/workspace/docs/notes.md")));
        QVERIFY(UiTest::waitFor(
            [&] { return !model->indexOf(QStringLiteral("/workspace/docs/notes.md")).isValid(); }));

        // Rename in place (a name, not a path: "/" is refused).
        page.rename(QStringLiteral("/workspace/docs/guides"), QStringLiteral("manual"));
        QVERIFY(UiTest::waitFor([&] { return exists(QStringLiteral("/workspace/docs/manual")); }));
        QVERIFY(!exists(QStringLiteral("/workspace/docs/guides")));
        QVERIFY(UiTest::waitFor(
            [&] { return model->indexOf(QStringLiteral("/workspace/docs/manual")).isValid(); }));
        // Refused by the page (it says why), before anything reaches the sandbox.
        QSignalSpy refused(&page, &SandboxPage::message);
        page.rename(QStringLiteral("/workspace/docs/manual"), QStringLiteral("../escape"));
        QCOMPARE(refused.size(), 1);
        QVERIFY2(refused.first().first().toString().contains(QStringLiteral("“/”")),
                 qPrintable(refused.first().first().toString()));
        QVERIFY(exists(QStringLiteral("/workspace/docs/manual")));

        // Delete (the confirmation is the page's; the model refreshes the parent).
        Client *c = m_engine.client();
        QVERIFY(UiTest::call<QString>([&](Callback<QString> cb) {
            return c->sandboxes().deleteFile(m_sandbox.id,
                                             QStringLiteral("/workspace/src/notes.md"), false, this,
                                             cb);
        }));
        model->refreshPath(QStringLiteral("/workspace/src"));
        QVERIFY(UiTest::waitFor(
            [&] { return !model->indexOf(QStringLiteral("/workspace/src/notes.md")).isValid(); }));
    }

    void clickOnEmptySpaceClearsTheSelection()
    {
        FilesPage page(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
        page.resize(300, 600);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        FileTreeModel *model = page.model();
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src")).isValid(), 10000);
        const QModelIndex src = model->indexOf(QStringLiteral("/workspace/src"));
        QTest::mouseClick(page.view()->viewport(), Qt::LeftButton, {},
                          page.view()->visualRect(src).center());
        QCOMPARE(page.view()->currentIndex(), src);
        // Below the last entry.
        QTest::mouseClick(page.view()->viewport(), Qt::LeftButton, {},
                          QPoint(20, page.view()->viewport()->height() - 5));
        QVERIFY(!page.view()->currentIndex().isValid());
        QVERIFY(page.view()->selectionModel()->selectedRows().isEmpty());
    }

    void followsFilesWrittenByAnotherPage()
    {
        FilesPage page(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
        page.resize(300, 600);
        page.show();
        FileTreeModel *model = page.model();
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src")).isValid(), 10000);
        page.view()->expand(model->indexOf(QStringLiteral("/workspace/src")));
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src/main.py")).isValid(),
                                 10000);
        // Written behind the page's back (as the console or an agent does), then the workspace
        // says files may have changed: the new file shows up and the size is the new one.
        QVERIFY(m_engine.exec(m_sandbox.id, QStringLiteral("echo new > src/fresh.txt && "
                                                           "printf '%0100d' 0 > src/main.py")));
        page.filesMayHaveChanged();
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src/fresh.txt")).isValid(),
                                 10000);
        QTRY_COMPARE_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src/main.py"))
                                      .siblingAtColumn(FileTreeModel::SizeColumn)
                                      .data()
                                      .toString(),
                                  QStringLiteral("100 B"), 10000);
    }

    void followsTheSandboxWithoutBeingTold()
    {
        FilesPage page(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
        page.resize(300, 600);
        page.show();
        FileTreeModel *model = page.model();
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src")).isValid(), 10000);
        page.view()->expand(model->indexOf(QStringLiteral("/workspace/src")));
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src/main.py")).isValid(),
                                 10000);
        QTRY_VERIFY_WITH_TIMEOUT(page.watch()->isReady(), 10000);
        const QPersistentModelIndex src = model->indexOf(QStringLiteral("/workspace/src"));
        // A command writes (no F5, no word from the console): the new file, its size, a file
        // in a folder never opened, a deletion. The expanded folder stays as it was.
        QVERIFY(m_engine.exec(m_sandbox.id, QStringLiteral("echo x > /workspace/new.txt && "
                                                           "printf '%0250d' 0 > src/watched.py")));
        QTRY_VERIFY_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/new.txt")).isValid(),
                                 10000);
        QTRY_COMPARE_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src/watched.py"))
                                      .siblingAtColumn(FileTreeModel::SizeColumn)
                                      .data()
                                      .toString(),
                                  QStringLiteral("250 B"), 10000);
        QVERIFY(m_engine.exec(m_sandbox.id, QStringLiteral("printf '%0300d' 0 > src/watched.py && "
                                                           "rm /workspace/new.txt")));
        QTRY_COMPARE_WITH_TIMEOUT(model->indexOf(QStringLiteral("/workspace/src/watched.py"))
                                      .siblingAtColumn(FileTreeModel::SizeColumn)
                                      .data()
                                      .toString(),
                                  QStringLiteral("300 B"), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!model->indexOf(QStringLiteral("/workspace/new.txt")).isValid(),
                                 10000);
        QVERIFY(src.isValid());
        QVERIFY(page.view()->isExpanded(src));
        QVERIFY(m_engine.exec(m_sandbox.id, QStringLiteral("rm src/watched.py")));
    }

    void databaseFilesAreNotOfferedForDeletion_data()
    {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("protectedData");
        QTest::newRow("pgdata") << "postgres"
                                << "/workspace/pgdata" << true;
        QTest::newRow("inside pgdata") << "postgres"
                                       << "/workspace/pgdata/base/1/112" << true;
        QTest::newRow("sqlite file") << "sqlite"
                                     << "/workspace/main.db" << true;
        QTest::newRow("sqlite wal") << "sqlite"
                                    << "/workspace/main.db-wal" << true;
        QTest::newRow("duckdb wal") << "duckdb"
                                    << "/workspace/main.duckdb.wal" << true;
        QTest::newRow("a script next to it") << "sqlite"
                                             << "/workspace/seed.sql" << false;
        QTest::newRow("postgres: other files") << "postgres"
                                               << "/workspace/dump.sql" << false;
    }

    void databaseFilesAreNotOfferedForDeletion()
    {
        QFETCH(QString, type);
        QFETCH(QString, path);
        QFETCH(bool, protectedData);
        SandboxInfo db = m_sandbox;
        db.kind = QStringLiteral("database");
        db.type = type;
        FilesPage page(SandboxPageContext{m_engine.client(), db, nullptr});
        QCOMPARE(page.isDatabaseFile(path), protectedData);
        // An agent's files are its own to delete, whatever their names.
        FilesPage agent(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
        QVERIFY(!agent.isDatabaseFile(path));
    }

    void uploadsDroppedFilesAndDownloads()
    {
        QTemporaryDir local;
        QVERIFY(local.isValid());
        // A file and a folder with a nested file, dropped onto /workspace/docs.
        writeLocal(local.filePath(QStringLiteral("hello.txt")), "hello from the desktop\n");
        QDir().mkpath(local.filePath(QStringLiteral("bundle/inner")));
        writeLocal(local.filePath(QStringLiteral("bundle/inner/data.bin")),
                   QByteArray("\x00\x01\x02\xff", 4));

        FilesPage page(SandboxPageContext{m_engine.client(), m_sandbox, nullptr});
        FileTreeModel *model = page.model();
        model->fetchMore({});
        QVERIFY(UiTest::waitFor([&] { return model->rowCount() > 0; }, 10000));
        QSignalSpy done(page.transfer(), &FileTransfer::finished);
        QMimeData drop;
        drop.setUrls({QUrl::fromLocalFile(local.filePath(QStringLiteral("hello.txt"))),
                      QUrl::fromLocalFile(local.filePath(QStringLiteral("bundle")))});
        const QModelIndex docs = model->indexOf(QStringLiteral("/workspace/docs"));
        QVERIFY(model->canDropMimeData(&drop, Qt::CopyAction, -1, -1, docs));
        QVERIFY(model->dropMimeData(&drop, Qt::CopyAction, -1, -1, docs));
        QVERIFY(done.wait(20000));
        QVERIFY2(done.first().at(1).toStringList().isEmpty(),
                 qPrintable(done.first().at(1).toStringList().join(u'\n')));
        QCOMPARE(done.first().first().toInt(), 2);
        QCOMPARE(m_engine.readFile(m_sandbox.id, QStringLiteral("/workspace/docs/hello.txt")).value(),
                 QByteArray("hello from the desktop\n"));
        QCOMPARE(m_engine
                     .readFile(m_sandbox.id,
                               QStringLiteral("/workspace/docs/bundle/inner/data.bin"))
                     .value(),
                 QByteArray("\x00\x01\x02\xff", 4));

        // Download a directory, then a file bigger than one page of the protocol.
        QVERIFY(m_engine.exec(m_sandbox.id,
                              QStringLiteral("head -c 9000000 /dev/urandom > docs/big.bin")));
        const QString target = local.filePath(QStringLiteral("out"));
        page.transfer()->download(QStringLiteral("/workspace/docs"), true, target);
        QVERIFY(done.wait(60000));
        QVERIFY2(done.last().at(1).toStringList().isEmpty(),
                 qPrintable(done.last().at(1).toStringList().join(u'\n')));
        QCOMPARE(readLocal(target + QStringLiteral("/hello.txt")),
                 QByteArray("hello from the desktop\n"));
        QCOMPARE(readLocal(target + QStringLiteral("/bundle/inner/data.bin")),
                 QByteArray("\x00\x01\x02\xff", 4));
        const auto sum = m_engine.exec(m_sandbox.id,
                                       QStringLiteral("sha256sum docs/big.bin | cut -c1-64"));
        QVERIFY(sum);
        QCOMPARE(QCryptographicHash::hash(readLocal(target + QStringLiteral("/big.bin")),
                                          QCryptographicHash::Sha256)
                     .toHex(),
                 sum->standardOutput.trimmed());
    }

    void refusesUploadsOverTheLimit()
    {
        QTemporaryDir local;
        QFile big(local.filePath(QStringLiteral("huge.bin")));
        QVERIFY(big.open(QIODevice::WriteOnly));
        big.resize(FileTransfer::MaxUploadBytes + 1);
        big.close();
        FileTransfer transfer(m_engine.client(), m_sandbox.id);
        QSignalSpy done(&transfer, &FileTransfer::finished);
        transfer.upload({big.fileName()}, QStringLiteral("/workspace"));
        QVERIFY(done.wait(10000));
        QCOMPARE(done.first().first().toInt(), 0);
        QVERIFY(done.first().at(1).toStringList().join(u' ').contains(
            QStringLiteral("cannot be uploaded")));
        QVERIFY(!exists(QStringLiteral("/workspace/huge.bin")));
    }

private:
    bool exists(const QString &path)
    {
        Client *c = m_engine.client();
        const auto r = UiTest::call<FileEntry>([&](Callback<FileEntry> cb) {
            return c->sandboxes().stat(m_sandbox.id, path, this, cb);
        });
        return r.ok();
    }
    static void writeLocal(const QString &path, const QByteArray &data)
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(data);
    }
    static QByteArray readLocal(const QString &path)
    {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<missing>");
    }

    UiTest::Engine m_engine;
    SandboxInfo m_sandbox;
};

QTEST_MAIN(TestFileTree)
#include "tst_filetree.moc"
