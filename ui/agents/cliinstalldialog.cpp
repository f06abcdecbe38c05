#include "cliinstalldialog.h"

#include <client/execstream.h>
#include <common/uistyle.h>

#include <QDialogButtonBox>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {

QString megabytes(double bytes)
{
    return QLocale().toString(qRound64(bytes / 1e6));
}

} // namespace

QString CliInstallDialog::offerText(const AgentCliInfo &cli)
{
    return tr("Install %1 (npm, ~%2 MB)").arg(cli.name, megabytes(double(cli.downloadBytes)));
}

CliInstallDialog::CliInstallDialog(AgentsService agents, const AgentCliInfo &cli, QWidget *parent)
    : QDialog(parent)
    , m_agents(agents)
    , m_cli(cli)
    , m_title(new QLabel(this))
    , m_status(new QLabel(this))
    , m_log(new QLabel(this))
    , m_bar(new QProgressBar(this))
{
    setWindowTitle(tr("Installing %1").arg(cli.name));
    setObjectName(QStringLiteral("cliInstallDialog"));
    m_title->setText(tr("Installing %1 %2 from npm into the engine's data folder. It is needed "
                        "once: every %1 sandbox uses it.")
                         .arg(cli.name, cli.version));
    m_title->setWordWrap(true);
    m_status->setText(tr("Starting npm…"));
    m_status->setObjectName(QStringLiteral("cliInstallStatus"));
    m_log->setObjectName(QStringLiteral("cliInstallLog"));
    m_log->setTextFormat(Qt::PlainText);
    m_log->setWordWrap(true);
    // Secondary, yet readable in every theme: the tone follows a palette change (a palette
    // copied here kept the light theme's grey on a dark window).
    Style::setTextTone(m_log, Style::Tone::Muted);
    m_bar->setRange(0, 1000);
    m_bar->setValue(0);
    m_bar->setTextVisible(false);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    m_cancel = buttons->button(QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::rejected, this, &CliInstallDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_bar);
    layout->addWidget(m_status);
    layout->addWidget(m_log);
    layout->addStretch();
    layout->addWidget(buttons);
    setMinimumWidth(440);
}

CliInstallDialog::~CliInstallDialog() = default;

void CliInstallDialog::start()
{
    m_stream = m_agents.installCli(m_cli.type, this);
    if (!m_stream) {
        finish(false, tr("This connection cannot install %1 (it needs the engine's WebSocket).")
                          .arg(m_cli.name));
        return;
    }
    connect(m_stream, &ExecStream::event, this, &CliInstallDialog::onEvent);
    connect(m_stream, &ExecStream::ended, this, [this] { finish(true, {}); });
    connect(m_stream, &ExecStream::failed, this,
            [this](const Error &e) { finish(false, e.message); });
    show();
}

void CliInstallDialog::onEvent(const QJsonObject &event)
{
    const QString type = event.value(QStringLiteral("type")).toString();
    if (type == QLatin1String("log")) {
        m_log->setText(event.value(QStringLiteral("line")).toString().left(200));
        return;
    }
    if (type != QLatin1String("progress"))
        return;
    const double downloaded = event.value(QStringLiteral("downloadedBytes")).toDouble();
    const double expected = event.value(QStringLiteral("expectedBytes")).toDouble();
    if (event.value(QStringLiteral("phase")).toString() == QLatin1String("finishing")) {
        m_bar->setRange(0, 0); // busy: the engine puts it in place
        m_status->setText(
            tr("Downloaded %1 MB; putting %2 in place…").arg(megabytes(downloaded), m_cli.name));
        return;
    }
    if (expected > 0)
        m_bar->setValue(int(qBound(0.0, downloaded / expected, 1.0) * 1000));
    m_status->setText(
        tr("Downloading: %1 of about %2 MB").arg(megabytes(downloaded), megabytes(expected)));
}

void CliInstallDialog::reject()
{
    if (!m_done && m_stream)
        m_stream->cancel(); // failed() follows, with Cancelled
    else
        QDialog::reject();
}

void CliInstallDialog::finish(bool ok, const QString &message)
{
    if (m_done)
        return;
    m_done = true;
    hide();
    if (ok)
        Q_EMIT installed(m_cli.type);
    else
        Q_EMIT failed(message);
    deleteLater();
}

} // namespace Sandbox::Ui
