#pragma once

#include "../connection/connectionmanager.h"

#include <QTimer>
#include <QWidget>

class QLabel;
class QToolButton;

namespace Sandbox::Ui {

// The status bar's connection part: a coloured dot and the state ("Connected to the local
// engine", "Connection lost: reconnecting in 3 s" counting down, "Not authorized ..."), a Retry
// button when it gave up, the engine's version and backend, and the quota in use.
class ConnectionStatus final : public QWidget
{
    Q_OBJECT

public:
    explicit ConnectionStatus(ConnectionManager *connection, QWidget *parent = nullptr);

    QString stateText() const;
    QString versionText() const;
    QString quotaText() const;

private:
    void refreshState();
    void updateSession();
    void updateQuota();

    ConnectionManager *m_connection; // not owned
    QLabel *m_dot;
    QLabel *m_state;
    QToolButton *m_retry;
    QLabel *m_version;
    QLabel *m_quota;
    QTimer m_countdown;
};

} // namespace Sandbox::Ui
