#pragma once

#include <client/agentrun.h>
#include <client/rpccall.h>
#include <client/types.h>

#include <QPointer>
#include <QWidget>

class QComboBox;
class QFrame;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTreeView;

namespace Sandbox {
class Client;
} // namespace Sandbox

namespace Sandbox::Ui {

class AgentChangesView;
class AgentTranscriptModel;
class AgentTranscriptView;
class FileTreeModel;
class SecretStore;
struct AgentProblem;

// One agent sandbox's session: the live transcript, a prompt box with Send and Stop, pickers for
// the model and the permission mode, token and cost totals, and the sandbox's files beside it.
// Follow-up prompts continue the same conversation. Self-contained: a tab can host it.
class AgentSessionView final : public QWidget
{
    Q_OBJECT

public:
    // `client` must outlive the view.
    AgentSessionView(Sandbox::Client *client, const Sandbox::SandboxInfo &sandbox,
                     QWidget *parent = nullptr);
    ~AgentSessionView() override;

    const Sandbox::SandboxInfo &sandbox() const { return m_sandbox; }
    void setSandbox(const Sandbox::SandboxInfo &sandbox);
    bool isRunning() const { return m_run != nullptr; }
    // The run going on was started by another connection and is watched (stream.watch).
    bool isWatchingRun() const { return m_run && m_run->isWatched(); }
    QString sessionId() const { return m_sessionId; }
    const Sandbox::AgentUsage &totals() const { return m_totals; }

    // Sends the prompt box's text (as the Send button does); false when empty or a run is on.
    bool send();
    bool send(const QString &prompt);
    // Runs the last prompt again in the same conversation with these tools allowed (the run
    // before was refused them), as "Allow and continue" on the problem bar does.
    bool allowAndContinue(const QStringList &tools);
    void stop();
    // True once the past runs are in the transcript (or could not be read).
    bool historyLoaded() const { return !m_historyCall.isPending() && !m_loadingHistory; }

    AgentTranscriptModel *transcript() const { return m_transcript; }
    // The review of each turn's changes (a tab beside the transcript).
    AgentChangesView *changesView() const { return m_changes; }
    QTabWidget *tabs() const { return m_tabs; }
    void showChanges();
    FileTreeModel *files() const { return m_files; }
    // For tests and for the host window's shortcuts.
    QPlainTextEdit *promptEdit() const { return m_prompt; }
    QPushButton *sendButton() const { return m_send; }
    QPushButton *stopButton() const { return m_stop; }
    QComboBox *modelPicker() const { return m_model; }
    QComboBox *permissionPicker() const { return m_permission; }
    QString totalsText() const;
    // The last run's problem in the user's terms, shown above the prompt with its fix.
    QLabel *problemLabel() const { return m_problemText; }
    QPushButton *fixButton() const { return m_fixButton; }

    // Where this sandbox's model key is kept (not owned; may be null: the key then lasts as long
    // as the view). The key kept for the sandbox is read from it at once.
    void setSecretStore(SecretStore *secrets);
    // The model key for this sandbox's runs, set from the problem bar ("Set the Model Key…"): it
    // goes with every run as the run's environment (docs/protocol.md 4.7), which the engine's
    // model gateway keeps out of the sandbox, and into the SecretStore, never into the settings.
    void setModelKey(const QString &key);
    bool hasModelKey() const { return !m_modelKey.isEmpty(); }
    // The SecretStore entry of a sandbox's model key: "model-key/ID/ANTHROPIC_API_KEY".
    static QString modelKeyName(const Sandbox::SandboxInfo &sandbox);
    // The allow entries the network refused during the last run ("api.example.com:443"), which
    // the problem bar offers to add to the sandbox's allow-list.
    QStringList deniedEntries() const;
    AgentTranscriptView *transcriptView() const { return m_view; }

Q_SIGNALS:
    void historyReady();
    void runStarted(const QString &sandboxId);
    void runFinished(const QString &sandboxId, const Sandbox::AgentRunResult &result);
    void runFailed(const QString &sandboxId, const QString &message);
    // The user took the fix offered for a problem (AgentProblem::Kind as int): the window acts.
    void fixRequested(const Sandbox::SandboxInfo &sandbox, int problemKind);
    // The view changed the sandbox (its network policy, from the problem bar).
    void sandboxChanged(const Sandbox::SandboxInfo &sandbox);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    void updateHeader();
    void updateTotals();
    void setRunning(bool running);
    void finishRun();
    void updateChangesTab(int comments);
    // The sandbox's past runs (docs/protocol.md 4.7.1) into the transcript, oldest first, so that
    // a session reopened after a restart of the app or the engine shows what happened; the
    // conversation continues from the newest.
    void loadHistory();
    void loadRunEvents(QList<Sandbox::AgentRunRecord> runs, qint64 after);
    // A run that ended on refused tool calls: the bar offers to allow them and go on.
    void offerToAllow(const Sandbox::AgentNeedsInput &needs);
    // Adds refused hosts to the sandbox's allow-list (sandbox.setNetwork).
    void allowHosts(const QStringList &entries);
    // Asks for the model key (masked), then keeps it for this sandbox's runs.
    void askModelKey();
    void onFix();
    // The fix for a problem (AgentProblem::Kind as int), from the bar or a transcript card.
    void applyFix(int problemKind, const QStringList &hosts);
    // Shows `run` (a prompt this view sent, or one watched) as it goes on.
    void follow(Sandbox::AgentRun *run, const QString &prompt);
    // A running run that another connection started: followed with stream.watch.
    bool isWatchable(const Sandbox::AgentRunRecord &run) const;
    void watchLiveRun();

    Sandbox::Client *m_client; // not owned
    Sandbox::SandboxInfo m_sandbox;
    AgentTranscriptModel *m_transcript; // owned (child)
    AgentTranscriptView *m_view;        // owned (child widget)
    QTabWidget *m_tabs;                 // owned (child widget)
    AgentChangesView *m_changes;        // owned (child widget)
    bool m_changesStale = true;
    FileTreeModel *m_files; // owned (child)
    QTreeView *m_fileTree;
    QLabel *m_header;
    QLabel *m_totalsLabel;
    QPlainTextEdit *m_prompt;
    QPushButton *m_send;
    QPushButton *m_stop;
    QComboBox *m_model;
    QComboBox *m_permission;
    QPointer<Sandbox::AgentRun> m_run; // owned (child) while it runs
    QString m_sessionId;
    Sandbox::AgentUsage m_totals;  // finished runs
    Sandbox::AgentUsage m_current; // the run going on
    // The bar shows `problem` with its fix (hidden for none, or for a refused tool, which
    // offerToAllow() shows).
    void showProblem(const AgentProblem &problem);

    QFrame *m_problem = nullptr;        // owned (child): the problem bar
    QLabel *m_problemText = nullptr;    // owned (child)
    QPushButton *m_fixButton = nullptr; // owned (child)
    int m_problemKind = 0;
    QStringList m_problemHosts;       // the bar's HostDenied fix allows these
    QStringList m_refusedTools;       // the problem bar's "Allow and continue" allows these
    QStringList m_allowedTools;       // allowed for the rest of the session
    QString m_lastPrompt;             // as typed, without review comments
    SecretStore *m_secrets = nullptr; // not owned
    QString m_modelKey;               // this sandbox's model key; never shown
    Sandbox::RpcCall m_historyCall;
    bool m_loadingHistory = false;
    Sandbox::AgentRunRecord m_liveRun; // watched once the history before it is shown
};

} // namespace Sandbox::Ui
