#pragma once

#include "codeeditor.h"

#include "../workspace/sandboxpage.h"

#include <client/types.h>

#include <QDateTime>
#include <QTimer>

#include <functional>
#include <memory>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;

namespace Sandbox::Ui {

class CodeEditorView;
class FindBar;

// A file of the sandbox in a QScintilla editor: lexer by file type, line numbers, folding,
// find/replace (Ctrl+F, Ctrl+H, F3), Ctrl+S saves back to the sandbox, "*" in the title while
// there are unsaved changes. The file's mtime and size as loaded are remembered: a save over a
// file that changed in the sandbox meanwhile asks first, and a check every few seconds (while
// visible) shows a banner offering to reload. Binary files and files over MaxEditableBytes are
// not loaded whole: a page says so and shows the beginning (text or hex), with a download button.
class EditorPage final : public SandboxPage
{
    Q_OBJECT

public:
    static constexpr qint64 MaxEditableBytes = 4LL * 1024 * 1024;
    static constexpr qint64 PreviewBytes = 64 * 1024;
    static constexpr int CheckIntervalMs = 3000;

    enum class State { Loading, Text, Binary, TooLarge, Failed };
    Q_ENUM(State)
    enum class ConflictChoice { Overwrite, Reload, Cancel };

    EditorPage(const SandboxPageContext &context, const QString &path, QWidget *parent = nullptr);
    ~EditorPage() override;

    QString title() const override;
    QString toolTip() const override;
    bool maybeClose() override;
    QJsonObject saveState() const override;
    void restoreState(const QJsonObject &state) override;

    QString path() const { return m_path; }
    State state() const { return m_state; }
    CodeEditor *editor() const { return m_editor; }
    FindBar *findBar() const;
    bool isModified() const;
    bool isSaving() const { return m_saving; }
    // The lexer's language ("python", ...) or empty for plain text.
    QString language() const { return m_language; }
    // Whether the "changed in the sandbox" banner is up.
    bool isChangeBannerVisible() const;
    QString infoText() const;

    void reload();
    // Saves to the sandbox; asks through the conflict handler when the file changed meanwhile.
    void save();
    // Checks the file in the sandbox now (the timer does it every CheckIntervalMs).
    void checkForChanges();
    // The path changed (renamed in the file tree).
    void setPath(const QString &path);
    void markDeleted();

    // Replaces the question asked when saving over a file changed in the sandbox (tests).
    void setConflictHandler(std::function<ConflictChoice(const FileEntry &current)> handler);

Q_SIGNALS:
    void loaded();
    void saved();
    void saveFailed(const QString &message);
    void changedInSandbox();
    void stateChanged(Sandbox::Ui::EditorPage::State state);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void setState(State state);
    void load();
    void showText(const QByteArray &content);
    void showInfo(const QString &text, const QByteArray &preview, bool canRetry);
    void write();
    void afterSave();
    void updateTitle();
    void showBanner(const QString &text);
    void hideBanner();
    bool differsFromBase(const FileEntry &e) const;
    ConflictChoice askConflict(const FileEntry &current);
    void download();
    static bool looksBinary(const QByteArray &bytes);
    static QString hexDump(const QByteArray &bytes);

    QString m_path;
    State m_state = State::Loading;
    QString m_language;
    QStackedWidget *m_stack;
    QWidget *m_textPage;
    CodeEditor *m_editor;         // owned (child of m_editorView)
    CodeEditorView *m_editorView; // owned (child)
    QWidget *m_banner;
    QLabel *m_bannerText;
    QWidget *m_infoPage;
    QLabel *m_infoLabel;
    QPlainTextEdit *m_preview;
    QPushButton *m_retryButton;
    QLabel *m_loadingLabel;
    bool m_loadOnShow = false;     // see the constructor
    FileEntry m_base;              // the file as last loaded or saved
    QDateTime m_acknowledgedMtime; // a change the user chose to keep their version over
    FileEntry m_pendingChange;     // the change the banner is about
    bool m_saving = false;
    bool m_checking = false;
    bool m_deleted = false;
    QTimer m_checkTimer;
    RpcCall m_call;
    QJsonObject m_pendingPosition;
    std::function<ConflictChoice(const FileEntry &)> m_conflictHandler;
    // The KSyntaxHighlighting repository of the read-only preview, when built with it.
    std::shared_ptr<void> m_highlighting;
};

} // namespace Sandbox::Ui
