#pragma once

#include "agentdashboardmodel.h"

#include <QHash>
#include <QIcon>
#include <QList>
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

    // Sends a notification (when `kind` is enabled). Returns false when it will not be sent. The
    // first one connects to the session bus off the GUI thread (a bus that answers slowly never
    // stalls the window) and goes out when the connection is made, with any that came meanwhile.
    bool notify(const QString &sandboxId, const QString &name, State kind, const QString &detail);

    // The D-Bus ids of the notifications sent and not yet closed, by sandbox.
    int pendingCount() const { return int(m_sent.size()); }
    QSystemTrayIcon *trayIcon() const { return m_tray; }
    // Whether the first notification's bus connection was tried to the end (made or not).
    bool busChecked() const { return m_busReady; }
    // The tray's icon for these totals: the application's, with a badge that counts the sessions
    // that need the user (input or a failed run; amber, or red when one failed), else the ones
    // running a prompt (in the palette's highlight).
    static QIcon trayIconFor(const AgentDashboardModel::Totals &totals);

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
    struct Pending
    {
        QString sandboxId;
        State kind;
        QString summary;
        QString body;
    };
    void updateTray();
    void send(const Pending &n);
    void busReady(bool connected);

    QPointer<AgentDashboardModel> m_model;
    QHash<uint, QString> m_sent; // notification id -> sandbox id
    QSystemTrayIcon *m_tray = nullptr;
    QString m_lastTraySandbox;
    bool m_busTried = false;
    bool m_busReady = false;
    bool m_dbus = false;
    QList<Pending> m_waiting; // until the bus connection is made
};

} // namespace Sandbox::Ui
