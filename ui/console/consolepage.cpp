#include "consolepage.h"

#include "commandline.h"
#include "consoleview.h"

#include "../common/elidedlabel.h"
#include "../common/uistyle.h"

#include <client/client.h>
#include <client/execstream.h>

#include <QAction>
#include <QHBoxLayout>
#include <QLabel>
#include <QLoggingCategory>
#include <QRegularExpression>
#include <QSettings>
#include <QToolButton>
#include <QVBoxLayout>

Q_LOGGING_CATEGORY(lcConsole, "sandbox.ui.console", QtInfoMsg)

namespace Sandbox::Ui {

namespace {
const QString kHistoryKey = QStringLiteral("console/history");

QString shellQuote(const QString &s)
{
    QString out = s;
    out.replace(u'\'', QStringLiteral("'\\''"));
    return u'\'' + out + u'\'';
}
} // namespace

ConsolePage::ConsolePage(const SandboxPageContext &context, QWidget *parent)
    : SandboxPage(context, parent)
    , m_view(new ConsoleView(this))
    , m_commandLine(new CommandLine(this))
    , m_prompt(new QLabel(this))
    , m_status(new ElidedLabel(this))
    , m_runButton(new QToolButton(this))
    , m_stopButton(new QToolButton(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_view, 1);

    auto *bar = new QWidget(this);
    auto *row = new QHBoxLayout(bar);
    row->setContentsMargins(6, 4, 6, 4);
    m_prompt->setFont(Style::monospaceFont());
    m_prompt->setTextFormat(Qt::PlainText);
    row->addWidget(m_prompt);
    row->addWidget(m_commandLine, 1);

    auto *runAction = new QAction(Style::icon("media-playback-start", QStyle::SP_MediaPlay, this),
                                  tr("Run"), this);
    runAction->setToolTip(tr("Run the command (Enter)"));
    connect(runAction, &QAction::triggered, this, [this] { run(m_commandLine->text()); });
    m_runButton->setDefaultAction(runAction);
    m_runButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    auto *stopAction = new QAction(Style::icon("process-stop", QStyle::SP_MediaStop, this),
                                   tr("Stop"), this);
    // The window's "Stop Command" (Ctrl+.) reaches the current console; no second shortcut here.
    stopAction->setToolTip(tr("Stop the running command and everything it started (Ctrl+.)"));
    connect(stopAction, &QAction::triggered, this, &ConsolePage::stop);
    m_stopButton->setDefaultAction(stopAction);
    m_stopButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    auto *clearButton = new QToolButton(this);
    clearButton->setText(tr("Clear"));
    clearButton->setToolTip(tr("Clear the output"));
    connect(clearButton, &QToolButton::clicked, m_view, &ConsoleView::clear);
    row->addWidget(m_runButton);
    row->addWidget(m_stopButton);
    row->addWidget(clearButton);
    // The status asks for its whole text and the command line takes the rest (at least 24
    // characters); when the row is short the status ends in "…" (its full text is in the
    // tooltip), and the buttons drop their text when the console is narrow.
    m_status->setObjectName(QStringLiteral("consoleStatus"));
    m_status->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_commandLine->setMinimumWidth(m_commandLine->fontMetrics().horizontalAdvance(u'x') * 24);
    row->setStretch(row->indexOf(m_commandLine), 1);
    row->addWidget(m_status);
    m_buttons = {m_runButton, m_stopButton, clearButton};
    layout->addWidget(bar);

    setFocusProxy(m_commandLine);
    connect(m_commandLine, &CommandLine::submitted, this, &ConsolePage::run);

    m_ticker.setInterval(100);
    connect(&m_ticker, &QTimer::timeout, this, [this] {
        m_status->setText(tr("running · %1").arg(Style::formatDuration(m_elapsed.elapsed())));
    });

    m_commandLine->setHistory(QSettings().value(kHistoryKey).toStringList());
    updateUi();
}

void ConsolePage::resizeEvent(QResizeEvent *event)
{
    SandboxPage::resizeEvent(event);
    const Qt::ToolButtonStyle style = width() < 640 ? Qt::ToolButtonIconOnly
                                                    : Qt::ToolButtonTextBesideIcon;
    for (QToolButton *b : std::as_const(m_buttons)) {
        // A button without an icon keeps its text.
        if (!b->icon().isNull())
            b->setToolButtonStyle(style);
    }
}

ConsolePage::~ConsolePage()
{
    // Closing the console ends what it runs, as closing a terminal does.
    if (m_stream && !m_stream->isDone())
        m_stream->cancel();
}

QString ConsolePage::title() const
{
    return tr("Console");
}

QJsonObject ConsolePage::saveState() const
{
    return {{QStringLiteral("cwd"), m_cwd}};
}

void ConsolePage::restoreState(const QJsonObject &state)
{
    const QString cwd = state.value(QStringLiteral("cwd")).toString();
    if (cwd.startsWith(QStringLiteral("/workspace")))
        m_cwd = cwd;
    updateUi();
}

void ConsolePage::connectionChanged(bool connected)
{
    if (!isRunning())
        return;
    if (!connected && !m_lostAt.isValid()) {
        // The command's clock stops with the connection: what it does now is not known.
        m_lostAt = QTime::currentTime();
        m_ticker.stop();
        m_view->finishOutput();
        m_view->appendLine(ConsoleBuffer::LineKind::Info,
                           tr("[the connection to the engine was lost at %1: waiting for it to "
                              "come back to show the rest of the output]")
                               .arg(m_lostAt.toString(QStringLiteral("HH:mm:ss"))));
        m_status->setText(
            tr("connection lost · %1").arg(Style::formatDuration(m_elapsed.elapsed())));
    } else if (connected && m_lostAt.isValid()) {
        m_status->setText(tr("reconnected · resuming the output"));
        m_ticker.start();
    }
}

void ConsolePage::focusCommandLine()
{
    m_commandLine->setFocus(Qt::ShortcutFocusReason);
}

QString ConsolePage::statusText() const
{
    return m_status->text();
}

QString ConsolePage::commandLineText() const
{
    return m_commandLine->text();
}

void ConsolePage::storeHistory(const QString &command)
{
    m_commandLine->addToHistory(command);
    // Other consoles may have added theirs meanwhile: merge rather than overwrite.
    QSettings settings;
    QStringList stored = settings.value(kHistoryKey).toStringList();
    if (stored.isEmpty() || stored.last() != command)
        stored.append(command);
    settings.setValue(kHistoryKey, stored.mid(qMax<qsizetype>(0, stored.size() - MaxStoredHistory)));
}

void ConsolePage::run(const QString &command)
{
    if (isRunning() || command.trimmed().isEmpty())
        return;
    if (!client()) {
        m_view->appendLine(ConsoleBuffer::LineKind::Error, tr("not connected"));
        return;
    }
    storeHistory(command);
    m_commandLine->clear();
    m_view->scrollToEnd();
    m_view->appendLine(ConsoleBuffer::LineKind::Command, m_cwd + QStringLiteral(" $ ") + command);

    static const QRegularExpression cdPattern(
        QStringLiteral("^\\s*cd(?:\\s+([^;&|<>`$()]*?))?\\s*$"));
    if (const auto match = cdPattern.match(command); match.hasMatch()) {
        changeDirectory(command, match.captured(1));
        return;
    }

    ExecOptions options;
    options.cwd = m_cwd;
    options.timeoutMs = CommandTimeoutMs;
    options.maxOutputBytes = MaxOutputBytes;
    m_stopRequested = false;
    m_stream = client()->sandboxes().execStreaming(sandbox().id, Command(command), options, this);
    if (!m_stream) {
        m_view->appendLine(ConsoleBuffer::LineKind::Error,
                           tr("this connection cannot stream output"));
        return;
    }
    qCDebug(lcConsole) << "run" << sandbox().id << command;
    connect(m_stream, &ExecStream::output, this,
            [this](const QString &channel, const QByteArray &data) {
                m_view->appendOutput(channel == QLatin1String("stderr")
                                         ? ConsoleBuffer::Channel::Stderr
                                         : ConsoleBuffer::Channel::Stdout,
                                     data);
            });
    connect(m_stream, &ExecStream::gap, this, [this](qint64 first, qint64 last) {
        m_view->appendLine(
            ConsoleBuffer::LineKind::Error,
            tr("[%n output chunk(s) lost while disconnected: the engine no longer held them]",
               nullptr, int(last - first + 1)));
    });
    connect(m_stream, &ExecStream::finished, this, &ConsolePage::onFinished);
    connect(m_stream, &ExecStream::failed, this, &ConsolePage::onFailed);
    m_elapsed.start();
    m_ticker.start();
    updateUi();
    Q_EMIT runningChanged(true);
    Q_EMIT filesTouched(true);
}

void ConsolePage::changeDirectory(const QString &command, const QString &target)
{
    Q_UNUSED(command)
    QString dir = target.trimmed();
    if (dir.isEmpty() || dir == QLatin1String("~"))
        dir = QStringLiteral("/workspace");
    ExecOptions options;
    options.cwd = m_cwd;
    options.timeoutMs = 10000;
    m_cdPending = true;
    m_elapsed.start();
    updateUi();
    Q_EMIT runningChanged(true);
    m_cdCall = client()
                   ->sandboxes()
                   .exec(sandbox().id,
                         Command(QStringLiteral("cd -- %1 && pwd").arg(shellQuote(dir))), options,
                         this, [this](Result<ExecResult> r) {
                             m_cdPending = false;
                             if (!r) {
                                 onFailed(r.error());
                                 return;
                             }
                             const QString out = QString::fromUtf8(r->standardOutput).trimmed();
                             if (r->exitCode == 0 && out.startsWith(QStringLiteral("/workspace")))
                                 m_cwd = out;
                             else if (r->exitCode == 0)
                                 m_view->appendLine(ConsoleBuffer::LineKind::Error,
                                                    tr("cd: stays inside /workspace"));
                             else
                                 m_view->appendOutput(ConsoleBuffer::Channel::Stderr,
                                                      r->standardError);
                             m_view->finishOutput();
                             endCommand();
                             Q_EMIT commandFinished(r.value());
                         });
}

void ConsolePage::stop()
{
    if (m_stream && !m_stream->isDone()) {
        m_stopRequested = true;
        m_stream->cancel();
        m_status->setText(tr("stopping…"));
    } else if (m_cdPending) {
        m_cdCall.cancel();
        m_cdPending = false;
        endCommand();
    }
}

void ConsolePage::onFinished(const ExecResult &result)
{
    m_view->finishOutput();
    QStringList parts;
    parts << tr("exit %1").arg(result.exitCode);
    if (!result.signal.isEmpty())
        parts << (m_stopRequested ? tr("stopped (%1)").arg(result.signal)
                                  : tr("killed by %1").arg(result.signal));
    if (result.timedOut)
        parts << tr("timed out");
    parts << Style::formatDuration(result.durationMs);
    const QString summary = parts.join(QStringLiteral(" · "));
    m_view->appendLine(result.exitCode == 0 ? ConsoleBuffer::LineKind::Info
                                            : ConsoleBuffer::LineKind::Error,
                       QStringLiteral("[%1]").arg(summary));
    if (result.truncated)
        m_view->appendLine(ConsoleBuffer::LineKind::Info,
                           tr("[the engine kept only the first %1 of output per channel]")
                               .arg(Style::formatSize(MaxOutputBytes)));
    m_status->setText(summary);
    endCommand();
    Q_EMIT commandFinished(result);
}

void ConsolePage::onFailed(const Error &error)
{
    m_view->finishOutput();
    QString text;
    if (error.code == ErrorCode::Cancelled)
        text = tr("[stopped · %1]").arg(Style::formatDuration(m_elapsed.elapsed()));
    else if (error.code == ErrorCode::ConnectionError) {
        // The exec's own call went with the connection: its output cannot be followed.
        if (!m_lostAt.isValid())
            m_lostAt = QTime::currentTime();
        text = tr("[the connection to the engine was lost at %1 while this command ran: its "
                  "output can no longer be followed. The command may still be running in the "
                  "sandbox (or it ended with the engine, if the engine stopped).]")
                   .arg(m_lostAt.toString(QStringLiteral("HH:mm:ss")));
    } else if (m_lostAt.isValid() && error.code == ErrorCode::NotFound)
        // The engine came back without the command's stream: it restarted, and its commands
        // ended with it.
        text = tr("[the engine restarted while this command ran (the connection was lost at %1): "
                  "the command ended with it and its output after that is lost. Run it again.]")
                   .arg(m_lostAt.toString(QStringLiteral("HH:mm:ss")));
    else if (m_lostAt.isValid())
        text = tr("[the connection to the engine was lost at %1 and the command's output could "
                  "not be resumed (%2). Whether it still runs is not known.]")
                   .arg(m_lostAt.toString(QStringLiteral("HH:mm:ss")), error.message);
    else if (error.code == ErrorCode::SandboxNotRunning)
        text = tr(
            "[the sandbox is not running: start it (Sandbox ▸ Start) and run the command again]");
    else
        text = tr("[error: %1]").arg(error.message);
    m_view->appendLine(ConsoleBuffer::LineKind::Error, text);
    m_status->setText(
        error.code == ErrorCode::Cancelled ? tr("stopped")
        : m_lostAt.isValid()
            ? tr("connection lost at %1").arg(m_lostAt.toString(QStringLiteral("HH:mm:ss")))
            : tr("failed"));
    endCommand();
    Q_EMIT commandFailed(error);
}

void ConsolePage::endCommand()
{
    m_ticker.stop();
    m_lostAt = QTime();
    if (m_stream) {
        m_stream->disconnect(this);
        m_stream->deleteLater();
    }
    m_stream = nullptr;
    m_view->flushPendingUpdate();
    updateUi();
    Q_EMIT runningChanged(false);
    Q_EMIT filesTouched(false);
}

void ConsolePage::updateUi()
{
    const bool running = isRunning();
    m_prompt->setText(m_cwd + QStringLiteral(" $"));
    m_runButton->setEnabled(!running);
    m_stopButton->setEnabled(running);
    m_commandLine->setReadOnly(false);
}

} // namespace Sandbox::Ui
