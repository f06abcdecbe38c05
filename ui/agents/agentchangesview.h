#pragma once

#include <client/agenttypes.h>
#include <client/rpccall.h>
#include <client/types.h>

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QTableView;
class QToolButton;

namespace Sandbox {
class Client;
} // namespace Sandbox

namespace Sandbox::Ui {

class DiffModel;

// A turn's review (docs/protocol.md 4.7.2): the agent sandbox's runs in a picker (newest first),
// the files the chosen run changed with their diffs — unified or side by side — "Revert" to put a
// file back as it was before the turn, comments on a line that go to the agent with the next
// prompt, and, when the run worked in a git repository, its branch and "Commit this turn".
class AgentChangesView final : public QWidget
{
    Q_OBJECT

public:
    struct Comment
    {
        QString path;
        int line = 0;
        bool afterTurn = true; // the line number is in the file after the turn (else before)
        QString lineText;
        QString text;
    };

    // `client` must outlive the view.
    AgentChangesView(Sandbox::Client *client, const QString &sandboxId, QWidget *parent = nullptr);
    ~AgentChangesView() override;

    // Reads the sandbox's runs again and shows the newest (after a run ended).
    void refresh();
    // Shows one run's changes.
    void showRun(const QString &runId);
    QString currentRunId() const;
    const Sandbox::AgentRunChanges &changes() const { return m_changes; }

    // The comments not yet sent, as text for the top of the next prompt ("" when none); taking
    // them clears them.
    QString takeCommentsForPrompt();
    const QList<Comment> &comments() const { return m_comments; }
    // Adds a comment on the selected line of the diff.
    bool addComment(const QString &text);

    // For tests and screenshots.
    QComboBox *runPicker() const { return m_runs; }
    QListWidget *fileList() const { return m_files; }
    QTableView *diffView() const { return m_diffView; }
    DiffModel *diffModel() const { return m_diff; }
    QPushButton *revertButton() const { return m_revert; }
    QPushButton *commitButton() const { return m_commit; }
    QToolButton *sideBySideButton() const { return m_sideBySide; }
    QLabel *statusLabel() const { return m_status; }
    QLineEdit *commentEdit() const { return m_commentEdit; }
    bool revertSelected();
    bool commitTurn();

Q_SIGNALS:
    void changesLoaded();
    void reverted(const QString &path);
    void committed(bool ok, const QString &output);
    void commentsChanged(int count);

protected:
    void changeEvent(QEvent *event) override;

private:
    void showFile(int row);
    void updateComments();
    void setStatus(const QString &text, bool error = false);

    Sandbox::Client *m_client; // not owned
    QString m_sandboxId;
    QList<Sandbox::AgentRunRecord> m_runRecords;
    Sandbox::AgentRunChanges m_changes;
    QList<Comment> m_comments;
    QSet<QString> m_reverted; // paths reverted in the run shown
    Sandbox::RpcCall m_call;
    Sandbox::RpcCall m_action;

    QComboBox *m_runs;
    QLabel *m_git;
    QLabel *m_status;
    QListWidget *m_files;
    QTableView *m_diffView;
    DiffModel *m_diff; // owned (child)
    QToolButton *m_sideBySide;
    QPushButton *m_revert;
    QPushButton *m_commit;
    QLineEdit *m_commentEdit;
    QPushButton *m_addComment;
    QListWidget *m_commentList;
};

} // namespace Sandbox::Ui
