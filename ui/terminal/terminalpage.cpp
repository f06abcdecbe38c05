#include "terminalpage.h"

#include "terminalview.h"

#include <client/sandboxmethods.h>
#include <client/terminalsession.h>

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {
// A login shell: bash where the sandbox has it, else sh.
const QString kShell = QStringLiteral(
    "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi");
} // namespace

TerminalPage::TerminalPage(const SandboxPageContext &context, QWidget *parent)
    : SandboxPage(context, parent)
    , m_view(new TerminalView(this))
    , m_status(new QLabel(this))
    , m_restartButton(new QToolButton(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_view, 1);
    auto *bar = new QHBoxLayout;
    bar->setContentsMargins(6, 2, 6, 2);
    bar->addWidget(m_status, 1);
    m_restartButton->setText(tr("New shell"));
    m_restartButton->setToolTip(tr("Start a new shell in this sandbox"));
    m_restartButton->setVisible(false);
    bar->addWidget(m_restartButton);
    layout->addLayout(bar);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    setFocusProxy(m_view);
    m_view->installEventFilter(this);

    connect(m_restartButton, &QToolButton::clicked, this, &TerminalPage::start);
    connect(m_view, &TerminalView::input, this, [this](const QByteArray &bytes) {
        if (m_session)
            m_session->input(bytes);
    });
    connect(m_view, &TerminalView::sizeChanged, this, [this](int cols, int rows) {
        if (m_session)
            m_session->resize(cols, rows);
    });
    connect(m_view, &TerminalView::titleChanged, this, [this](const QString &t) {
        m_programTitle = t;
        Q_EMIT titleChanged();
    });
}

TerminalPage::~TerminalPage()
{
    hangUp();
}

QString TerminalPage::title() const
{
    return tr("Terminal");
}

bool TerminalPage::isRunning() const
{
    return m_session && !m_session->isDone();
}

void TerminalPage::showEvent(QShowEvent *event)
{
    SandboxPage::showEvent(event);
    if (!m_started)
        start();
}

void TerminalPage::start()
{
    if (isRunning() || !client())
        return;
    m_started = true;
    if (m_session)
        m_session->deleteLater();
    m_view->reset();
    TerminalOptions options;
    options.cols = m_view->screen().cols();
    options.rows = m_view->screen().rows();
    m_session = client()->sandboxes().openTerminal(sandbox().id, Command(kShell), options, this);
    if (!m_session) {
        setStatus(tr("This connection cannot open a terminal (it needs the WebSocket)."));
        return;
    }
    m_restartButton->setVisible(false);
    setStatus(
        tr("Starting a shell in %1…").arg(sandbox().name.isEmpty() ? sandbox().id : sandbox().name));
    connect(m_session, &TerminalSession::started, this, [this] {
        setStatus({});
        Q_EMIT runningChanged(true);
    });
    connect(m_session, &TerminalSession::output, m_view, &TerminalView::feed);
    connect(m_session, &TerminalSession::reset, m_view, &TerminalView::reset);
    connect(m_session, &TerminalSession::finished, this, &TerminalPage::onFinished);
    connect(m_session, &TerminalSession::failed, this, &TerminalPage::onFailed);
    connect(m_session, &TerminalSession::controlFailed, this,
            [this](const Error &e) { Q_EMIT message(e.message); });
}

void TerminalPage::hangUp()
{
    if (m_session && !m_session->isDone())
        m_session->close();
}

void TerminalPage::onFinished(const ExecResult &result)
{
    m_view->feed("\r\n");
    setStatus(result.signal.isEmpty()
                  ? tr("The shell exited with %1. Press Enter for a new one.").arg(result.exitCode)
                  : tr("The shell was killed (%1). Press Enter for a new one.").arg(result.signal));
    m_restartButton->setVisible(true);
    Q_EMIT runningChanged(false);
}

void TerminalPage::onFailed(const Error &error)
{
    setStatus(tr("The terminal ended: %1").arg(error.message));
    m_restartButton->setVisible(true);
    Q_EMIT runningChanged(false);
}

void TerminalPage::setStatus(const QString &text)
{
    m_status->setText(text);
    m_status->setVisible(!text.isEmpty() || m_restartButton->isVisible());
}

bool TerminalPage::eventFilter(QObject *watched, QEvent *event)
{
    // Enter after the shell ended starts a new one.
    if (watched == m_view && event->type() == QEvent::KeyPress && !isRunning() && m_started) {
        const auto *key = static_cast<QKeyEvent *>(event);
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
            start();
            return true;
        }
    }
    return SandboxPage::eventFilter(watched, event);
}

} // namespace Sandbox::Ui
