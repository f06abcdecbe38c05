#include "connectionstatus.h"

#include "../common/uistyle.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>

namespace Sandbox::Ui {

ConnectionStatus::ConnectionStatus(ConnectionManager *connection, QWidget *parent)
    : QWidget(parent)
    , m_connection(connection)
    , m_dot(new QLabel(this))
    , m_state(new QLabel(this))
    , m_retry(new QToolButton(this))
    , m_version(new QLabel(this))
    , m_quota(new QLabel(this))
{
    auto *row = new QHBoxLayout(this);
    row->setContentsMargins(4, 0, 4, 0);
    row->setSpacing(6);
    row->addWidget(m_dot);
    row->addWidget(m_state);
    row->addWidget(m_retry);
    row->addStretch(1);
    row->addWidget(m_quota);
    auto *sep = new QLabel(QStringLiteral("·"), this);
    row->addWidget(sep);
    row->addWidget(m_version);
    m_retry->setText(tr("Retry"));
    m_retry->setAutoRaise(true);
    m_retry->hide();
    m_state->setTextFormat(Qt::PlainText);
    m_quota->setTextFormat(Qt::PlainText);
    m_version->setTextFormat(Qt::PlainText);
    connect(m_retry, &QToolButton::clicked, m_connection, &ConnectionManager::retry);
    connect(m_connection, &ConnectionManager::stateChanged, this, &ConnectionStatus::refreshState);
    connect(m_connection, &ConnectionManager::reconnectScheduled, this,
            &ConnectionStatus::refreshState);
    connect(m_connection, &ConnectionManager::sessionChanged, this,
            &ConnectionStatus::updateSession);
    connect(m_connection, &ConnectionManager::quotaChanged, this, &ConnectionStatus::updateQuota);
    connect(m_connection, &ConnectionManager::clientChanged, this, [this] {
        updateSession();
        updateQuota();
    });
    m_countdown.setInterval(250);
    connect(&m_countdown, &QTimer::timeout, this, &ConnectionStatus::refreshState);
    refreshState();
    updateSession();
    updateQuota();
}

QString ConnectionStatus::stateText() const
{
    return m_state->text();
}

QString ConnectionStatus::versionText() const
{
    return m_version->text();
}

QString ConnectionStatus::quotaText() const
{
    return m_quota->text();
}

void ConnectionStatus::refreshState()
{
    using State = ConnectionManager::State;
    const State s = m_connection->state();
    QString colour;
    switch (s) {
    case State::Connected:
        colour = QStringLiteral("running");
        break;
    case State::Connecting:
    case State::StartingEngine:
    case State::Reconnecting:
        colour = QStringLiteral("starting");
        break;
    case State::Unauthorized:
    case State::Failed:
        colour = QStringLiteral("error");
        break;
    case State::Disconnected:
        colour = QStringLiteral("stopped");
        break;
    }
    m_dot->setPixmap(Style::statusIcon(colour).pixmap(12, 12));
    m_state->setText(m_connection->stateText());
    m_state->setToolTip(m_connection->errorMessage());
    m_retry->setVisible(s == State::Failed || s == State::Unauthorized || s == State::Disconnected);
    if (s == State::Reconnecting)
        m_countdown.start();
    else
        m_countdown.stop();
}

void ConnectionStatus::updateSession()
{
    const auto session = m_connection->session();
    if (!session) {
        m_version->setText(tr("engine —"));
        return;
    }
    m_version->setText(tr("%1 engine %2").arg(session->backend, session->version));
}

void ConnectionStatus::updateQuota()
{
    const auto quota = m_connection->quota();
    if (!quota) {
        m_quota->setText(QString());
        return;
    }
    m_quota->setText(tr("running %1/%2 · memory %3/%4")
                         .arg(quota->running.used)
                         .arg(quota->running.limit)
                         .arg(quota->memoryMb.used == 0
                                  ? QStringLiteral("0")
                                  : Style::formatSize(quota->memoryMb.used * 1024 * 1024),
                              Style::formatSize(quota->memoryMb.limit * 1024 * 1024)));
    m_quota->setToolTip(
        tr("Quota of this API key: %1 of %2 sandboxes running, %3 of %4 MiB of sandbox memory, "
           "%5 sandboxes in all")
            .arg(quota->running.used)
            .arg(quota->running.limit)
            .arg(quota->memoryMb.used)
            .arg(quota->memoryMb.limit)
            .arg(quota->sandboxes.used));
}

} // namespace Sandbox::Ui
