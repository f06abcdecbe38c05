#pragma once

#include "agentdashboardmodel.h"

#include <QHash>
#include <QObject>
#include <QPointer>

class QSystemTrayIcon;

namespace Sandbox::Ui {

// Tells the user that an agent's run ended — done, failed, or waiting for them — with a desktop
// notification (org.freedesktop.Notifications over the D-Bus session bus; clicking it opens the
// session) and, where the desktop has a system tray, a tray icon that counts the sessions that
// need input or failed. Each kind can be turned off (setEnabled(), kept in QSettings under
// "notifications/<kind>").
class RunNotifier final : public QObject
{
    Q_OBJECT

public:
    using State = AgentDashboardModel::State;

    explicit RunNotifier(QObject *parent = nullptr);
    ~RunNotifier() override;

    // Watches `model`'s runs (runEnded) and totals (the tray's counts); not owned.
    void watch(AgentDashboardModel *model);

    static QString settingsKey(State kind); // "notifications/done" | "failed" | "needsInput"
    static bool isEnabled(State kind);
    static void setEnabled(State kind, bool enabled);

    // Sends a notification now (when `kind` is enabled). Returns false when it was not sent.
    bool notify(const QString &sandboxId, const QString &name, State kind, const QString &detail);

    // The D-Bus ids of the notifications sent and not yet closed, by sandbox.
    int pendingCount() const { return int(m_sent.size()); }
    QSystemTrayIcon *trayIcon() const { return m_tray; }

Q_SIGNALS:
    // The user clicked a notification (or the tray icon's message): open this session.
    void openRequested(const QString &sandboxId);
    // A notification went out (D-Bus or tray): for tests and the status bar.
    void notified(const QString &sandboxId, const QString &summary, const QString &body);

private Q_SLOTS:
    // org.freedesktop.Notifications' signals.
    void onActionInvoked(uint id, const QString &action);
    void onClosed(uint id, uint reason);

private:
    void updateTray();

    QPointer<AgentDashboardModel> m_model;
    QHash<uint, QString> m_sent; // notification id -> sandbox id
    QSystemTrayIcon *m_tray = nullptr;
    QString m_lastTraySandbox;
    bool m_busTried = false;
    bool m_dbus = false;
};

} // namespace Sandbox::Ui
