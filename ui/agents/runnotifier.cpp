#include "runnotifier.h"

#include <QApplication>
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QIcon>
#include <QPainter>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QSystemTrayIcon>
#include <QThread>

#include <memory>
#include <utility>

namespace Sandbox::Ui {

namespace {
const QString kService = QStringLiteral("org.freedesktop.Notifications");
const QString kPath = QStringLiteral("/org/freedesktop/Notifications");
const QString kInterface = QStringLiteral("org.freedesktop.Notifications");
constexpr int kMaxBody = 300;
} // namespace

RunNotifier::RunNotifier(QObject *parent)
    : QObject(parent)
{
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
        m_tray = new QSystemTrayIcon(this);
        m_tray->setIcon(QApplication::style()->standardIcon(QStyle::SP_ComputerIcon));
        m_tray->setToolTip(tr("Sandbox Desktop"));
        connect(m_tray, &QSystemTrayIcon::messageClicked, this, [this] {
            if (!m_lastTraySandbox.isEmpty())
                Q_EMIT openRequested(m_lastTraySandbox);
        });
        m_tray->show();
    }
}

RunNotifier::~RunNotifier() = default;

void RunNotifier::watch(AgentDashboardModel *model)
{
    if (m_model)
        disconnect(m_model, nullptr, this, nullptr);
    m_model = model;
    if (!model)
        return updateTray();
    connect(model, &AgentDashboardModel::runEnded, this,
            [this](const QString &id, const QString &name, State state, const QString &detail) {
                notify(id, name, state, detail);
            });
    connect(model, &AgentDashboardModel::totalsChanged, this, &RunNotifier::updateTray);
    updateTray();
}

QString RunNotifier::settingsKey(State kind)
{
    switch (kind) {
    case State::Done:
        return QStringLiteral("notifications/done");
    case State::Failed:
        return QStringLiteral("notifications/failed");
    case State::NeedsInput:
        return QStringLiteral("notifications/needsInput");
    default:
        return {};
    }
}

bool RunNotifier::isEnabled(State kind)
{
    const QString key = settingsKey(kind);
    return !key.isEmpty() && QSettings().value(key, true).toBool();
}

void RunNotifier::setEnabled(State kind, bool enabled)
{
    const QString key = settingsKey(kind);
    if (!key.isEmpty())
        QSettings().setValue(key, enabled);
}

bool RunNotifier::notify(const QString &sandboxId, const QString &name, State kind,
                         const QString &detail)
{
    if (!isEnabled(kind))
        return false;
    QString summary;
    switch (kind) {
    case State::Done:
        summary = tr("%1: done").arg(name);
        break;
    case State::Failed:
        summary = tr("%1: the run failed").arg(name);
        break;
    case State::NeedsInput:
        summary = tr("%1 needs your input").arg(name);
        break;
    default:
        return false;
    }
    QString body = detail.simplified();
    if (body.size() > kMaxBody)
        body = body.left(kMaxBody - 1) + QChar(0x2026);
    // The server may show markup: the agent's words are text.
    body = body.toHtmlEscaped();

    const Pending n{sandboxId, kind, summary, body};
    if (!m_busTried) {
        // The session bus on first use, not at start (most sessions never notify), and not on
        // the GUI thread: connecting can take the bus's whole timeout.
        m_busTried = true;
        auto connected = std::make_shared<bool>(false);
        QThread *thread = QThread::create(
            [connected] { *connected = QDBusConnection::sessionBus().isConnected(); });
        connect(thread, &QThread::finished, thread, &QObject::deleteLater);
        connect(thread, &QThread::finished, this, [this, connected] { busReady(*connected); });
        thread->start();
    }
    if (!m_busReady) {
        if (m_waiting.size() < 100)
            m_waiting.append(n);
        return true;
    }
    send(n);
    return m_dbus || m_tray;
}

void RunNotifier::busReady(bool connected)
{
    m_busReady = true;
    if (connected) {
        m_dbus = true;
        QDBusConnection bus = QDBusConnection::sessionBus();
        bus.connect(kService, kPath, kInterface, QStringLiteral("ActionInvoked"), this,
                    SLOT(onActionInvoked(uint, QString)));
        bus.connect(kService, kPath, kInterface, QStringLiteral("NotificationClosed"), this,
                    SLOT(onClosed(uint, uint)));
    }
    const QList<Pending> waiting = std::exchange(m_waiting, {});
    for (const Pending &n : waiting)
        send(n);
}

void RunNotifier::send(const Pending &n)
{
    const QString &sandboxId = n.sandboxId;
    const QString &summary = n.summary;
    const QString &body = n.body;
    if (m_dbus) {
        QDBusMessage call = QDBusMessage::createMethodCall(kService, kPath, kInterface,
                                                           QStringLiteral("Notify"));
        QVariantMap hints;
        hints.insert(QStringLiteral("desktop-entry"),
                     QStringLiteral("dev.sandboxdesktop.SandboxDesktop"));
        hints.insert(QStringLiteral("urgency"),
                     QVariant::fromValue(uchar(n.kind == State::Done ? 1 : 2)));
        call << QApplication::applicationDisplayName() << uint(0) << QString() << summary << body
             << QStringList{QStringLiteral("default"), tr("Open")} << hints << int(-1);
        auto *watcher = new QDBusPendingCallWatcher(QDBusConnection::sessionBus().asyncCall(call,
                                                                                            5000),
                                                    this);
        connect(watcher, &QDBusPendingCallWatcher::finished, this,
                [this, watcher, sandboxId, summary, body] {
                    watcher->deleteLater();
                    QDBusPendingReply<uint> reply = *watcher;
                    if (reply.isError()) {
                        // No notification server: the tray says it, when there is one.
                        if (m_tray) {
                            m_lastTraySandbox = sandboxId;
                            m_tray->showMessage(summary, body);
                        }
                        return;
                    }
                    if (m_sent.size() < 1000)
                        m_sent.insert(reply.value(), sandboxId);
                });
    } else if (m_tray) {
        m_lastTraySandbox = sandboxId;
        m_tray->showMessage(summary, body);
    } else {
        return;
    }
    Q_EMIT notified(sandboxId, summary, body);
}

void RunNotifier::onActionInvoked(uint id, const QString &action)
{
    const QString sandbox = m_sent.value(id);
    if (sandbox.isEmpty() || (action != QLatin1String("default")))
        return;
    Q_EMIT openRequested(sandbox);
}

void RunNotifier::onClosed(uint id, uint)
{
    m_sent.remove(id);
}

void RunNotifier::updateTray()
{
    if (!m_tray)
        return;
    const AgentDashboardModel::Totals t = m_model ? m_model->totals()
                                                  : AgentDashboardModel::Totals{};
    const QStringList parts = AgentDashboardModel::stateCounts(t);
    m_tray->setToolTip(
        parts.isEmpty() ? tr("Sandbox Desktop")
                        : tr("Sandbox Desktop — agents: %1").arg(parts.join(QStringLiteral(", "))));
    m_tray->setIcon(trayIconFor(t));
}

QIcon RunNotifier::trayIconFor(const AgentDashboardModel::Totals &totals)
{
    const QIcon base = QApplication::style()->standardIcon(QStyle::SP_ComputerIcon);
    const int attention = totals.needsInput + totals.failed;
    const int count = attention > 0 ? attention : totals.running;
    if (count <= 0)
        return base;
    const QPalette palette = QApplication::palette();
    const QColor colour = totals.failed > 0       ? QColor(0xd3, 0x2f, 0x2f)
                          : totals.needsInput > 0 ? QColor(0xf5, 0x9e, 0x0b)
                                                  : palette.color(QPalette::Highlight);
    QIcon icon;
    for (int size : {16, 22, 24, 32, 48, 64}) {
        QPixmap pixmap = base.pixmap(size);
        pixmap.setDevicePixelRatio(1.0);
        pixmap = pixmap.scaled(size, size);
        QPainter p(&pixmap);
        p.setRenderHint(QPainter::Antialiasing);
        const int d = qMax(9, size * 5 / 8);
        const QRectF badge(size - d, 0, d, d);
        p.setPen(Qt::NoPen);
        p.setBrush(colour);
        p.drawEllipse(badge);
        QFont f = QApplication::font();
        f.setBold(true);
        f.setPixelSize(qMax(7, d * 3 / 4));
        p.setFont(f);
        p.setPen(colour.lightnessF() > 0.6 ? Qt::black : Qt::white);
        p.drawText(badge, Qt::AlignCenter,
                   count > 9 ? QStringLiteral("9+") : QString::number(count));
        p.end();
        icon.addPixmap(pixmap);
    }
    return icon;
}

} // namespace Sandbox::Ui
