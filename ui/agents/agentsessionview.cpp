#include "agentsessionview.h"

#include "agentchangesview.h"
#include "agentproblem.h"

#include "../common/uistyle.h"

#include "agenttranscriptmodel.h"
#include "agenttranscriptview.h"

#include "../connection/secretstore.h"
#include "../files/filetreemodel.h"

#include <client/agentrun.h>
#include <client/client.h>
#include <client/rpcclient.h>
#include <protocol/sandboxenums.h>

#include <QComboBox>

#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QKeyEvent>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

namespace Sandbox::Ui {

namespace {

QStringList modelsFor(const QString &type)
{
    if (fromWire<SandboxType>(type) == SandboxType::ClaudeCode)
        return {QString(), QStringLiteral("claude-sonnet-4-5"), QStringLiteral("claude-opus-4-1"),
                QStringLiteral("claude-haiku-4-5")};
    return {QString(), QStringLiteral("gpt-5.5"), QStringLiteral("gpt-5"),
            QStringLiteral("gpt-5-mini")};
}

} // namespace

AgentSessionView::AgentSessionView(Client *client, const SandboxInfo &sandbox, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_sandbox(sandbox)
    , m_transcript(new AgentTranscriptModel(this))
    , m_view(new AgentTranscriptView(this))
    , m_tabs(new QTabWidget(this))
    , m_changes(new AgentChangesView(client, sandbox.id, this))
    , m_files(new FileTreeModel(client, sandbox.id, this))
    , m_fileTree(new QTreeView(this))
    , m_header(new QLabel(this))
    , m_totalsLabel(new QLabel(this))
    , m_prompt(new QPlainTextEdit(this))
    , m_send(new QPushButton(tr("Send"), this))
    , m_stop(new QPushButton(tr("Stop"), this))
    , m_model(new QComboBox(this))
    , m_permission(new QComboBox(this))
{
    m_transcript->setAgentType(sandbox.type);
    m_view->setTranscript(m_transcript);
    connect(m_view, &AgentTranscriptView::fixRequested, this, &AgentSessionView::applyFix);
    m_fileTree->setModel(m_files);
    m_fileTree->header()->setSectionResizeMode(FileTreeModel::NameColumn, QHeaderView::Stretch);
    m_fileTree->setColumnHidden(FileTreeModel::ModifiedColumn, true);
    m_fileTree->setUniformRowHeights(true);

    m_header->setObjectName(QStringLiteral("sessionHeader"));
    m_header->setTextFormat(Qt::RichText);
    m_header->setWordWrap(true);
    m_prompt->setPlaceholderText(tr("Ask the agent… (Ctrl+Enter sends)"));
    m_prompt->setMaximumHeight(120);
    m_prompt->installEventFilter(this);
    m_model->setEditable(true);
    for (const QString &m : modelsFor(sandbox.type))
        m_model->addItem(m.isEmpty() ? tr("(default model)") : m, m);
    m_model->setToolTip(tr("The model the agent's CLI asks for"));
    m_permission->addItem(tr("Bypass permissions (the sandbox is the isolation)"),
                          QStringLiteral("bypassPermissions"));
    m_permission->addItem(tr("Accept edits"), QStringLiteral("acceptEdits"));
    m_permission->addItem(tr("Ask (refuse in this non-interactive run)"),
                          QStringLiteral("default"));
    m_permission->addItem(tr("Plan only"), QStringLiteral("plan"));
    m_stop->setEnabled(false);

    auto *controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Model:"), this));
    controls->addWidget(m_model, 1);
    controls->addWidget(new QLabel(tr("Permissions:"), this));
    controls->addWidget(m_permission, 1);
    controls->addStretch();
    controls->addWidget(m_totalsLabel);

    auto *promptRow = new QHBoxLayout;
    promptRow->addWidget(m_prompt, 1);
    auto *buttons = new QVBoxLayout;
    buttons->addWidget(m_send);
    buttons->addWidget(m_stop);
    buttons->addStretch();
    promptRow->addLayout(buttons);

    // The problem bar: what stopped the last run, in words, with its fix in place.
    m_problem = new QFrame(this);
    m_problem->setObjectName(QStringLiteral("problem"));
    Style::setBackgroundTone(m_problem, Style::Tone::Warning);
    auto *problemRow = new QHBoxLayout(m_problem);
    problemRow->setContentsMargins(8, 4, 8, 4);
    m_problemText = new QLabel(m_problem);
    m_problemText->setWordWrap(true);
    m_problemText->setTextFormat(Qt::PlainText);
    m_fixButton = new QPushButton(m_problem);
    problemRow->addWidget(m_problemText, 1);
    problemRow->addWidget(m_fixButton);
    m_problem->hide();
    connect(m_fixButton, &QPushButton::clicked, this, &AgentSessionView::onFix);

    auto *left = new QWidget(this);
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    // The transcript, and beside it what each turn changed (read when first looked at).
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_view, tr("Transcript"));
    m_tabs->addTab(m_changes, tr("Changes"));
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int i) {
        if (m_tabs->widget(i) == m_changes && m_changesStale) {
            m_changesStale = false;
            m_changes->refresh();
        }
    });
    connect(m_changes, &AgentChangesView::commentsChanged, this,
            &AgentSessionView::updateChangesTab);
    connect(m_changes, &AgentChangesView::reverted, this, [this] { m_files->refresh(); });
    leftLayout->addWidget(m_tabs, 1);
    leftLayout->addWidget(m_problem);
    leftLayout->addLayout(controls);
    leftLayout->addLayout(promptRow);

    auto *splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(left);
    splitter->addWidget(m_fileTree);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    // The transcript and the prompt never collapse (Send must stay reachable); the file list may.
    splitter->setCollapsible(0, false);
    left->setMinimumWidth(left->minimumSizeHint().width());

    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_header);
    layout->addWidget(splitter, 1);

    connect(m_send, &QPushButton::clicked, this, [this] { send(); });
    connect(m_stop, &QPushButton::clicked, this, &AgentSessionView::stop);
    updateHeader();
    updateTotals();
    loadHistory();
}

AgentSessionView::~AgentSessionView() = default;

namespace {
constexpr int kHistoryRuns = 20;
constexpr int kHistoryEventsPerRun = 5000;
} // namespace

void AgentSessionView::loadHistory()
{
    m_loadingHistory = true;
    m_historyCall
        = m_client->agents().runs(m_sandbox.id, kHistoryRuns, this,
                                  [this](Result<QList<AgentRunRecord>> r) {
                                      QList<AgentRunRecord> runs = r ? r.value()
                                                                     : QList<AgentRunRecord>();
                                      std::reverse(runs.begin(), runs.end()); // oldest first
                                      // A run that another connection (another window, sandboxctl,
                                      // another computer) started and that still goes on is
                                      // watched live after the runs before it.
                                      AgentRunRecord live;
                                      if (!runs.isEmpty() && isWatchable(runs.last()))
                                          live = runs.takeLast();
                                      for (const AgentRunRecord &run : std::as_const(runs)) {
                                          if (!run.sessionId.isEmpty())
                                              m_sessionId = run.sessionId;
                                          m_totals.inputTokens += run.usage.inputTokens;
                                          m_totals.outputTokens += run.usage.outputTokens;
                                          if (run.usage.costUsd)
                                              m_totals.costUsd = m_totals.costUsd.value_or(0)
                                                                 + *run.usage.costUsd;
                                      }
                                      updateTotals();
                                      m_liveRun = live;
                                      loadRunEvents(runs, 0);
                                  });
}

bool AgentSessionView::isWatchable(const AgentRunRecord &run) const
{
    RpcClient *rpc = m_client->rpc();
    return run.status == AgentRunRecord::Status::Running && !run.streamId.isEmpty() && rpc
           && !rpc->followsStream(run.streamId);
}

void AgentSessionView::watchLiveRun()
{
    const AgentRunRecord run = std::exchange(m_liveRun, AgentRunRecord{});
    if (run.runId.isEmpty() || m_run)
        return;
    AgentRun *watched = m_client->agents().watchRun(run.streamId, 0, this);
    if (!watched)
        return;
    const QStringList prompts = run.prompts.isEmpty() ? QStringList{run.prompt} : run.prompts;
    m_lastPrompt = run.prompt;
    follow(watched, prompts.join(QStringLiteral("\n\n")));
}

void AgentSessionView::loadRunEvents(QList<AgentRunRecord> runs, qint64 after)
{
    if (runs.isEmpty() || !m_loadingHistory) {
        m_loadingHistory = false;
        watchLiveRun();
        Q_EMIT historyReady();
        return;
    }
    const AgentRunRecord run = runs.first();
    if (after == 0) {
        const QStringList prompts = run.prompts.isEmpty() ? QStringList{run.prompt} : run.prompts;
        m_transcript->addPrompt(prompts.join(QStringLiteral("\n\n")));
    }
    m_historyCall = m_client->agents().runEvents(
        m_sandbox.id, run.runId, after, 1000, this,
        [this, runs, run](Result<AgentRunEvents> r) mutable {
            if (r)
                m_transcript->addEvents(r->events);
            if (r && r->more && r->last < kHistoryEventsPerRun && !r->seqs.isEmpty())
                return loadRunEvents(runs, r->seqs.last());
            if (run.answer)
                m_transcript->addRunEnd(*run.answer);
            else if (run.error)
                m_transcript->addProblem(run.error->message);
            else if (run.status == AgentRunRecord::Status::Interrupted)
                m_transcript->addError(tr("Interrupted: the engine stopped during this run."));
            if (runs.size() == 1 && run.answer && run.answer->needsInput.isNeeded()) {
                m_lastPrompt = run.prompt;
                offerToAllow(run.answer->needsInput);
            }
            runs.removeFirst();
            loadRunEvents(runs, 0);
        });
}

void AgentSessionView::onFix()
{
    if (!m_refusedTools.isEmpty())
        allowAndContinue(m_refusedTools);
    else
        applyFix(m_problemKind, m_problemHosts);
}

void AgentSessionView::applyFix(int problemKind, const QStringList &hosts)
{
    switch (AgentProblem::Kind(problemKind)) {
    case AgentProblem::Kind::HostDenied:
        allowHosts(hosts);
        break;
    case AgentProblem::Kind::NoModelKey:
        askModelKey();
        break;
    case AgentProblem::Kind::NoNetwork:
    case AgentProblem::Kind::NoCli:
        Q_EMIT fixRequested(m_sandbox, problemKind);
        break;
    default:
        break;
    }
}

QStringList AgentSessionView::deniedEntries() const
{
    return m_transcript->deniedHosts();
}

QString AgentSessionView::modelKeyName(const SandboxInfo &sandbox)
{
    return QStringLiteral("model-key/") + sandbox.id + u'/'
           + AgentProblem::keyVariable(sandbox.type);
}

void AgentSessionView::setSecretStore(SecretStore *secrets)
{
    m_secrets = secrets;
    if (!m_secrets)
        return;
    m_secrets->read(modelKeyName(m_sandbox), this, [this](Result<QString> key) {
        // NotFound: none kept for this sandbox (its key, if any, came at its creation).
        if (key && !key->isEmpty() && m_modelKey.isEmpty())
            m_modelKey = key.value();
    });
}

void AgentSessionView::setModelKey(const QString &key)
{
    m_modelKey = key.trimmed();
    if (m_secrets && !m_modelKey.isEmpty()) {
        m_secrets->write(modelKeyName(m_sandbox), m_modelKey, this,
                         [this](const std::optional<Error> &error) {
                             if (error)
                                 m_transcript->addError(
                                     tr("The model key could not be kept in the keyring (%1): "
                                        "it is used until the app closes.")
                                         .arg(error->message));
                         });
    }
    if (AgentProblem::Kind(m_problemKind) == AgentProblem::Kind::NoModelKey)
        m_problem->hide();
    // What was refused is one Send away.
    if (m_prompt->toPlainText().trimmed().isEmpty() && !m_lastPrompt.isEmpty())
        m_prompt->setPlainText(m_lastPrompt);
}

void AgentSessionView::askModelKey()
{
    if (findChild<QInputDialog *>(QStringLiteral("modelKeyDialog")))
        return;
    auto *dialog = new QInputDialog(this);
    dialog->setObjectName(QStringLiteral("modelKeyDialog"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("Model Key"));
    dialog->setInputMode(QInputDialog::TextInput);
    dialog->setTextEchoMode(QLineEdit::Password);
    const QString variable = AgentProblem::keyVariable(m_sandbox.type);
    dialog->setLabelText(
        m_sandbox.gateway
            ? tr("The key for this sandbox's model API (%1). It is kept in the desktop keyring "
                 "and sent with each run to the engine, whose model gateway adds it to the "
                 "model calls: the sandbox never sees it.")
                  .arg(variable)
            : tr("The key for this sandbox's model API (%1). It is kept in the desktop keyring "
                 "and given to each run of this sandbox (it has no model gateway: the agent's "
                 "program sees it while it runs).")
                  .arg(variable));
    // A few lines, not one line as wide as the screen.
    if (auto *label = dialog->findChild<QLabel *>())
        label->setWordWrap(true);
    dialog->resize(480, dialog->sizeHint().height());
    dialog->setWindowModality(Qt::WindowModal);
    connect(dialog, &QInputDialog::textValueSelected, this, [this](const QString &key) {
        if (!key.trimmed().isEmpty())
            setModelKey(key);
    });
    dialog->open();
}

void AgentSessionView::allowHosts(const QStringList &entries)
{
    if (entries.isEmpty())
        return;
    m_fixButton->setEnabled(false);
    const QString id = m_sandbox.id;
    const auto failed = [this](const QString &message) {
        m_fixButton->setEnabled(true);
        m_problemText->setText(tr("The allow-list could not be changed: %1").arg(message));
        m_fixButton->hide();
        m_problem->show();
    };
    // From the policy as the engine has it now (the Network page may have changed it).
    m_client->sandboxes()
        .status(id, this,
                [this, id, entries, failed](Result<SandboxInfo> current) {
                    if (!current)
                        return failed(current.error().message);
                    NetworkPolicy policy = current->networkPolicy;
                    for (const QString &entry : entries)
                        policy = policy.allowing(entry);
                    m_client->sandboxes()
                        .setNetwork(id, policy, this,
                                    [this, failed](Result<SandboxInfo> r) {
                                        if (!r)
                                            return failed(r.error().message);
                                        m_fixButton->setEnabled(true);
                                        m_problemHosts.clear();
                                        m_problem->hide();
                                        m_sandbox = r.value();
                                        updateHeader();
                                        if (m_prompt->toPlainText().trimmed().isEmpty())
                                            m_prompt->setPlainText(m_lastPrompt);
                                        Q_EMIT sandboxChanged(m_sandbox);
                                    })
                        .detach();
                })
        .detach();
}

void AgentSessionView::offerToAllow(const AgentNeedsInput &needs)
{
    if (needs.reason != AgentNeedsInput::Reason::Permission || needs.tools.isEmpty())
        return;
    m_refusedTools = needs.toolNames();
    m_refusedTools.removeDuplicates();
    m_problemText->setText(tr("The agent was not allowed to use %1: it stopped there.")
                               .arg(m_refusedTools.join(QStringLiteral(", "))));
    m_fixButton->setText(tr("Allow and continue"));
    m_fixButton->show();
    m_problem->show();
}

bool AgentSessionView::allowAndContinue(const QStringList &tools)
{
    if (m_run)
        return false;
    for (const QString &t : tools) {
        if (!m_allowedTools.contains(t))
            m_allowedTools.append(t);
    }
    m_refusedTools.clear();
    m_problem->hide();
    // The refused prompt again, in the same conversation, now with the tools allowed.
    const QString prompt
        = m_lastPrompt.isEmpty()
              ? tr("Go on: %1 is allowed now.").arg(tools.join(QStringLiteral(", ")))
              : m_lastPrompt;
    return send(prompt);
}

void AgentSessionView::setSandbox(const SandboxInfo &sandbox)
{
    m_sandbox = sandbox;
    updateHeader();
}

void AgentSessionView::updateHeader()
{
    const QString name = (m_sandbox.name.isEmpty() ? m_sandbox.id : m_sandbox.name).toHtmlEscaped();
    // Every sandbox has a network of its own; the policy says where it may go, and with the
    // gateway the model calls go through the engine whatever the policy.
    const QString policy = m_sandbox.networkPolicy.summary().toHtmlEscaped();
    QString network;
    if (m_sandbox.gateway)
        network = tr("network: <b>%1</b> · model calls through the engine").arg(policy);
    else if (m_sandbox.network)
        network = tr("network: <b>%1</b> (the agent calls its model API itself)").arg(policy);
    else
        network = QStringLiteral("<span style=\"color:%1\">%2</span>")
                      .arg(Style::htmlColor(Style::color(Style::Tone::Error, palette())),
                           tr("no network: the agent cannot reach its model API"));
    m_header->setText(
        QStringLiteral("<b>%1</b> · %2 · %3 · %4")
            .arg(name, m_sandbox.type.toHtmlEscaped(),
                 (isRunning() ? tr("running a prompt") : m_sandbox.status).toHtmlEscaped(),
                 network));
}

QString AgentSessionView::totalsText() const
{
    AgentUsage u = m_totals;
    u.inputTokens += m_current.inputTokens;
    u.outputTokens += m_current.outputTokens;
    std::optional<double> cost = m_totals.costUsd;
    if (m_current.costUsd)
        cost = cost.value_or(0) + *m_current.costUsd;
    const QLocale locale;
    return tr("Tokens: %1 in · %2 out · Cost: %3")
        .arg(locale.toString(u.inputTokens), locale.toString(u.outputTokens),
             cost ? QStringLiteral("$%1").arg(*cost, 0, 'f', 4) : tr("not reported"));
}

void AgentSessionView::updateTotals()
{
    m_totalsLabel->setText(totalsText());
}

void AgentSessionView::setRunning(bool running)
{
    m_send->setEnabled(!running);
    m_stop->setEnabled(running);
    m_model->setEnabled(!running);
    m_permission->setEnabled(!running);
    updateHeader();
}

void AgentSessionView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        updateHeader(); // its warning's colour comes from the palette
}

bool AgentSessionView::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_prompt
        && (event->type() == QEvent::KeyPress || event->type() == QEvent::ShortcutOverride)) {
        const auto *key = static_cast<QKeyEvent *>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter)
            && (key->modifiers() & Qt::ControlModifier)) {
            // Ctrl+Enter is the prompt's own, whatever the window binds it to.
            event->accept();
            if (event->type() == QEvent::KeyPress)
                send();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

bool AgentSessionView::send()
{
    if (!send(m_prompt->toPlainText().trimmed()))
        return false;
    m_prompt->clear();
    m_problem->hide();
    return true;
}

void AgentSessionView::showChanges()
{
    m_tabs->setCurrentWidget(m_changes);
}

void AgentSessionView::updateChangesTab(int comments)
{
    m_tabs->setTabText(m_tabs->indexOf(m_changes),
                       comments > 0
                           ? tr("Changes (%n comment(s) for the next prompt)", nullptr, comments)
                           : tr("Changes"));
}

bool AgentSessionView::send(const QString &typed)
{
    if (typed.isEmpty() || m_run)
        return false;
    if (m_loadingHistory) {
        // The user is faster than the history: what is shown so far stays, the rest is dropped.
        m_loadingHistory = false;
        m_historyCall.cancel();
        m_liveRun = {};
        Q_EMIT historyReady();
    }
    // Review comments on the last turn go with the prompt, above it.
    const QString comments = m_changes->takeCommentsForPrompt();
    const QString prompt = comments.isEmpty() ? typed : comments + u'\n' + typed;
    m_lastPrompt = typed;
    AgentRunOptions options;
    options.model = m_model->currentData().toString();
    if (options.model.isEmpty() && m_model->currentText() != m_model->itemText(0))
        options.model = m_model->currentText().trimmed();
    options.permissionMode = m_permission->currentData().toString();
    options.sessionId = m_sessionId;
    options.allowedTools = m_allowedTools;
    options.newSession = m_sessionId.isEmpty() && m_transcript->rowCount() == 0;
    if (!m_modelKey.isEmpty())
        options.env.insert(AgentProblem::keyVariable(m_sandbox.type), m_modelKey);
    AgentRun *run = m_client->agents().runStreaming(m_sandbox.id, prompt, options, this);
    if (!run) {
        m_transcript->addError(tr("This connection cannot stream agent runs."));
        return false;
    }
    follow(run, prompt);
    return true;
}

void AgentSessionView::follow(AgentRun *run, const QString &prompt)
{
    m_run = run;
    m_current = {};
    m_transcript->addPrompt(prompt);
    setRunning(true);
    // (The transcript keeps the hosts the network refused: network.denied.)
    connect(run, &AgentRun::event, this, [this](const AgentEvent &e) { m_transcript->addEvent(e); });
    connect(run, &AgentRun::sessionStarted, this, [this](const QString &id) { m_sessionId = id; });
    connect(run, &AgentRun::usageChanged, this, [this](const AgentUsage &u) {
        m_current = u;
        updateTotals();
    });
    connect(run, &AgentRun::fileChange, this, [this] { m_files->refresh(); });
    connect(run, &AgentRun::finished, this, [this](const AgentRunResult &r) {
        if (!r.sessionId.isEmpty())
            m_sessionId = r.sessionId;
        m_current = r.usage;
        const QStringList denied = m_transcript->deniedHosts();
        if (!r.success)
            showProblem(AgentProblem::explain(r.error.isEmpty() ? r.result : r.error,
                                              m_sandbox.type, denied));
        else if (!denied.isEmpty())
            showProblem(AgentProblem::deniedHosts(denied));
        m_transcript->addRunEnd(r);
        finishRun();
        offerToAllow(r.needsInput);
        Q_EMIT runFinished(m_sandbox.id, r);
    });
    connect(run, &AgentRun::failed, this, [this](const Error &e) {
        if (e.code == ErrorCode::Cancelled) {
            m_transcript->addError(tr("Stopped: %1").arg(e.message));
        } else {
            showProblem(
                AgentProblem::explain(e.message, m_sandbox.type, m_transcript->deniedHosts()));
            m_transcript->addProblem(e.message);
        }
        finishRun();
        Q_EMIT runFailed(m_sandbox.id, e.message);
    });
    Q_EMIT runStarted(m_sandbox.id);
}

void AgentSessionView::showProblem(const AgentProblem &p)
{
    m_refusedTools.clear();
    m_problemKind = int(p.kind);
    m_problemHosts = p.hosts;
    if (p.kind == AgentProblem::Kind::None || p.kind == AgentProblem::Kind::ToolRefused) {
        m_problem->hide();
        return;
    }
    m_problemText->setText(p.text);
    m_fixButton->setText(p.fix);
    m_fixButton->setVisible(!p.fix.isEmpty());
    m_problem->show();
}

void AgentSessionView::finishRun()
{
    m_totals.inputTokens += m_current.inputTokens;
    m_totals.outputTokens += m_current.outputTokens;
    if (m_current.costUsd)
        m_totals.costUsd = m_totals.costUsd.value_or(0) + *m_current.costUsd;
    m_current = {};
    if (m_run)
        m_run->deleteLater();
    m_run = nullptr;
    setRunning(false);
    updateTotals();
    m_files->refresh();
    // The turn's changes: read now when they are on screen, else when the tab is opened.
    m_changesStale = true;
    if (m_tabs->currentWidget() == m_changes) {
        m_changesStale = false;
        m_changes->refresh();
    }
}

void AgentSessionView::stop()
{
    if (m_run)
        m_run->cancel();
}

} // namespace Sandbox::Ui
