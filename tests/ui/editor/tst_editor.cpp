// The editor against a real sandbox: a file opens with its lexer, Ctrl+S saves it into the
// sandbox, the dirty marker follows, a change made in the sandbox meanwhile is noticed (before
// saving, and by the periodic check), and binary or very large files are not loaded whole.
#include <uitest.h>

#include <editor/editorpage.h>
#include <editor/findbar.h>

#include <Qsci/qsciscintilla.h>

#include <QSignalSpy>
#include <QTest>

using namespace Sandbox;
using namespace Sandbox::Ui;

class TestEditor final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        UiTest::isolateSettings();
        QVERIFY2(m_engine.start(), qPrintable(m_engine.process().log()));
        const auto s = m_engine.createAgent(QStringLiteral("editor"));
        QVERIFY(s);
        m_sandbox = s.value();
    }

    void editAndSaveChangesTheFileInTheSandbox()
    {
        QVERIFY(m_engine.writeFile(m_sandbox.id, QStringLiteral("/workspace/app/main.py"),
                                   "def main():\n    return 1\n"));
        auto *page = open(QStringLiteral("/workspace/app/main.py"));
        QCOMPARE(page->state(), EditorPage::State::Text);
        QCOMPARE(page->language(), QStringLiteral("python"));
        QVERIFY(page->editor()->lexer());
        QCOMPARE(page->editor()->text(), QStringLiteral("def main():\n    return 1\n"));
        QCOMPARE(page->title(), QStringLiteral("main.py"));
        QVERIFY(!page->isModified());

        // Type, as a user would: the title gets its marker.
        QSignalSpy titleChanged(page, &SandboxPage::titleChanged);
        page->editor()->setFocus();
        page->editor()->setCursorPosition(1, 12); // after "return 1"
        QTest::keyClicks(page->editor(), QStringLiteral("00"));
        QVERIFY(page->isModified());
        QCOMPARE(page->title(), QStringLiteral("main.py*"));
        QVERIFY(!titleChanged.isEmpty());

        // Ctrl+S saves into the sandbox.
        QSignalSpy saved(page, &EditorPage::saved);
        QTest::keySequence(page->editor(), QKeySequence::Save);
        QVERIFY(saved.wait(10000));
        QCOMPARE(m_engine.readFile(m_sandbox.id, QStringLiteral("/workspace/app/main.py")).value(),
                 QByteArray("def main():\n    return 100\n"));
        QVERIFY(!page->isModified());
        QCOMPARE(page->title(), QStringLiteral("main.py"));
        // Our own save is not taken for a change in the sandbox.
        QSignalSpy changed(page, &EditorPage::changedInSandbox);
        page->checkForChanges();
        QVERIFY(!changed.wait(500));
        QVERIFY(!page->isChangeBannerVisible());
        delete page;
    }

    void aChangeInTheSandboxIsNoticed()
    {
        QVERIFY(
            m_engine.writeFile(m_sandbox.id, QStringLiteral("/workspace/notes.md"), "# Notes\n"));
        auto *page = open(QStringLiteral("/workspace/notes.md"));
        QCOMPARE(page->language(), QStringLiteral("markdown"));
        QTest::qWait(1100); // mtimes have a resolution; make the next write surely newer
        QVERIFY(
            m_engine.exec(m_sandbox.id, QStringLiteral("echo 'added by the agent' >> notes.md")));

        // The periodic check shows the banner.
        QSignalSpy changed(page, &EditorPage::changedInSandbox);
        page->checkForChanges();
        QVERIFY(changed.wait(10000));
        QVERIFY(page->isChangeBannerVisible());

        // Saving over it asks first; Cancel keeps the sandbox's version.
        int asked = 0;
        page->setConflictHandler([&](const FileEntry &) {
            ++asked;
            return EditorPage::ConflictChoice::Cancel;
        });
        page->editor()->append(QStringLiteral("mine\n"));
        page->save();
        QVERIFY(UiTest::waitFor([&] { return asked == 1 && !page->isSaving(); }, 10000));
        QCOMPARE(m_engine.readFile(m_sandbox.id, QStringLiteral("/workspace/notes.md")).value(),
                 QByteArray("# Notes\nadded by the agent\n"));
        QVERIFY(page->isModified());

        // Overwrite replaces it.
        page->setConflictHandler([&](const FileEntry &) {
            ++asked;
            return EditorPage::ConflictChoice::Overwrite;
        });
        QSignalSpy saved(page, &EditorPage::saved);
        page->save();
        QVERIFY(saved.wait(10000));
        QCOMPARE(asked, 2);
        QCOMPARE(m_engine.readFile(m_sandbox.id, QStringLiteral("/workspace/notes.md")).value(),
                 QByteArray("# Notes\nmine\n"));

        // Reload takes theirs.
        QTest::qWait(1100); // on purpose, as above: the next write's mtime is surely newer
        QVERIFY(m_engine.exec(m_sandbox.id, QStringLiteral("echo theirs > notes.md")));
        page->editor()->append(QStringLiteral("unsaved\n"));
        page->setConflictHandler(
            [](const FileEntry &) { return EditorPage::ConflictChoice::Reload; });
        QSignalSpy loaded(page, &EditorPage::loaded);
        page->save();
        QVERIFY(loaded.wait(10000));
        QCOMPARE(page->editor()->text(), QStringLiteral("theirs\n"));
        QVERIFY(!page->isModified());
        delete page;
    }

    void findAndReplace()
    {
        QVERIFY(m_engine.writeFile(m_sandbox.id, QStringLiteral("/workspace/q.sql"),
                                   "select a from t;\nSELECT b from t;\n"));
        auto *page = open(QStringLiteral("/workspace/q.sql"));
        page->findBar()->setFindText(QStringLiteral("select"));
        page->findBar()->setReplaceText(QStringLiteral("SELECT DISTINCT"));
        page->findBar()->setOptions(false, true, false);
        QVERIFY(page->findBar()->findNext());
        QCOMPARE(page->editor()->selectedText(), QStringLiteral("select"));
        QCOMPARE(page->findBar()->replaceAll(), 2);
        QCOMPARE(page->editor()->text(),
                 QStringLiteral("SELECT DISTINCT a from t;\nSELECT DISTINCT b from t;\n"));
        page->editor()->undo(); // one undo step for the whole replacement
        QCOMPARE(page->editor()->text(), QStringLiteral("select a from t;\nSELECT b from t;\n"));
        page->findBar()->setOptions(true, false, false);
        page->findBar()->setFindText(QStringLiteral("SELECT"));
        QCOMPARE(page->findBar()->replaceAll(), 1);
        page->findBar()->setFindText(QStringLiteral("nothing-like-this"));
        QVERIFY(!page->findBar()->findNext());
        delete page;
    }

    void binaryAndLargeFilesAreShownAsSuch()
    {
        QVERIFY(m_engine.exec(
            m_sandbox.id,
            QStringLiteral(
                "head -c 5000 /dev/urandom > blob.bin; printf 'PNG\\0\\1' >> blob.bin; "
                "yes 'a long line of text in a large log file' | head -c 6000000 > big.log")));
        auto *binary = open(QStringLiteral("/workspace/blob.bin"));
        QCOMPARE(binary->state(), EditorPage::State::Binary);
        QVERIFY(binary->infoText().contains(QStringLiteral("binary")));
        QVERIFY(!binary->isModified());
        delete binary;

        auto *large = open(QStringLiteral("/workspace/big.log"));
        QCOMPARE(large->state(), EditorPage::State::TooLarge);
        QVERIFY2(large->infoText().contains(QStringLiteral("too large")),
                 qPrintable(large->infoText()));
        // Ctrl+S does nothing to a file that is not loaded whole.
        large->save();
        QVERIFY(!large->isSaving());
        delete large;

        auto *missing = open(QStringLiteral("/workspace/does-not-exist.txt"));
        QCOMPARE(missing->state(), EditorPage::State::Failed);
        delete missing;
    }

    void keepsWindowsLineEndings()
    {
        QVERIFY(
            m_engine.writeFile(m_sandbox.id, QStringLiteral("/workspace/win.txt"), "a\r\nb\r\n"));
        auto *page = open(QStringLiteral("/workspace/win.txt"));
        QCOMPARE(page->editor()->eolMode(), QsciScintilla::EolWindows);
        page->editor()->setCursorPosition(1, 1);
        QTest::keyClick(page->editor(), Qt::Key_Return);
        QTest::keyClicks(page->editor(), QStringLiteral("c"));
        QSignalSpy saved(page, &EditorPage::saved);
        page->save();
        QVERIFY(saved.wait(10000));
        QCOMPARE(m_engine.readFile(m_sandbox.id, QStringLiteral("/workspace/win.txt")).value(),
                 QByteArray("a\r\nb\r\nc\r\n"));
        delete page;
    }

private:
    EditorPage *open(const QString &path)
    {
        auto *page = new EditorPage(SandboxPageContext{m_engine.client(), m_sandbox, nullptr}, path);
        page->resize(800, 600);
        page->show();
        QSignalSpy loaded(page, &EditorPage::loaded);
        if (page->state() == EditorPage::State::Loading)
            loaded.wait(10000);
        return page;
    }

    UiTest::Engine m_engine;
    SandboxInfo m_sandbox;
};

QTEST_MAIN(TestEditor)
#include "tst_editor.moc"
