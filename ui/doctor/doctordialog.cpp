#include "doctordialog.h"

#include "common/uistyle.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QToolButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {

// The status colour (and dot) that stands for a verdict.
QString statusOf(const QString &verdict)
{
    if (verdict == QLatin1String("ok"))
        return QStringLiteral("running");
    if (verdict == QLatin1String("warn"))
        return QStringLiteral("starting");
    if (verdict == QLatin1String("fail"))
        return QStringLiteral("error");
    return QStringLiteral("stopped");
}

QString verdictText(const QString &verdict)
{
    if (verdict == QLatin1String("ok"))
        return DoctorDialog::tr("OK");
    if (verdict == QLatin1String("warn"))
        return DoctorDialog::tr("Warning");
    if (verdict == QLatin1String("fail"))
        return DoctorDialog::tr("Fails");
    return DoctorDialog::tr("Not checked");
}

} // namespace

DoctorDialog::DoctorDialog(QWidget *parent)
    : QDialog(parent)
    , m_check(new HostCheck(this))
    , m_host(new QLabel(this))
    , m_summary(new QLabel(this))
    , m_rows(new QWidget)
    , m_rowsLayout(new QVBoxLayout(m_rows))
{
    setObjectName(QStringLiteral("doctorDialog"));
    setWindowTitle(tr("System Check"));
    resize(760, 560);

    auto *layout = new QVBoxLayout(this);
    auto *intro = new QLabel(tr("What sandboxes need from this computer, checked by the local "
                                "engine (sandboxd doctor)."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    QFont bold = m_host->font();
    bold.setBold(true);
    m_host->setFont(bold);
    m_host->setWordWrap(true);
    m_host->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_host);
    m_summary->setWordWrap(true);
    m_summary->setObjectName(QStringLiteral("doctorSummary"));
    layout->addWidget(m_summary);

    m_rowsLayout->setContentsMargins(0, 0, 0, 0);
    m_rowsLayout->setSpacing(0);
    m_rowsLayout->addStretch();
    auto *scroll = new QScrollArea(this);
    scroll->setWidget(m_rows);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::StyledPanel);
    layout->addWidget(scroll, 1);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    m_again = buttons->addButton(tr("Check &Again"), QDialogButtonBox::ActionRole);
    connect(m_again, &QPushButton::clicked, this, &DoctorDialog::runCheck);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);

    connect(m_check, &HostCheck::finished, this, &DoctorDialog::setReport);
}

void DoctorDialog::setProgram(const QString &sandboxd, const QStringList &extraArguments)
{
    m_check->setProgram(sandboxd);
    m_check->setExtraArguments(extraArguments);
}

void DoctorDialog::runCheck()
{
    if (m_check->isRunning())
        return;
    clearRows();
    m_host->setText(tr("Checking this computer…"));
    m_summary->clear();
    m_again->setEnabled(false);
    m_check->run();
}

void DoctorDialog::clearRows()
{
    while (m_rowsLayout->count() > 1) { // the stretch stays last
        QLayoutItem *item = m_rowsLayout->takeAt(0);
        delete item->widget();
        delete item;
    }
}

void DoctorDialog::setReport(const Result<HostReport> &report)
{
    clearRows();
    m_again->setEnabled(true);
    if (!report) {
        m_report.reset();
        m_host->setText(tr("This computer could not be checked"));
        m_summary->setText(report.error().message);
        Q_EMIT checked(true);
        return;
    }
    m_report = report.value();
    m_host->setText(tr("This computer: %1").arg(report->host));
    if (report->failures > 0)
        m_summary->setText((report->failures == 1 ? tr("1 check failed")
                                                  : tr("%1 checks failed").arg(report->failures))
                           + tr(": sandboxes do not work, or not as safely as they should, until "
                                "it is fixed. Each check says how."));
    else if (report->warnings > 0)
        m_summary->setText(
            tr("Sandboxes work. %1 say what is missing or weaker, and how to fix it.")
                .arg(report->warnings == 1 ? tr("1 warning")
                                           : tr("%1 warnings").arg(report->warnings)));
    else
        m_summary->setText(tr("Every check passed."));
    int i = 0;
    for (const HostCheckItem &item : report->checks)
        m_rowsLayout->insertWidget(i++, makeRow(item));
    Q_EMIT checked(report->failures > 0);
}

QWidget *DoctorDialog::makeRow(const HostCheckItem &item)
{
    auto *row = new QFrame;
    row->setObjectName(QStringLiteral("check-") + item.id);
    row->setFrameShape(QFrame::NoFrame);
    auto *grid = new QGridLayout(row);
    grid->setContentsMargins(10, 8, 10, 8);
    grid->setHorizontalSpacing(10);

    auto *dot = new QLabel(row);
    dot->setPixmap(Style::statusIcon(statusOf(item.verdict), 14).pixmap(14, 14));
    dot->setToolTip(verdictText(item.verdict));
    grid->addWidget(dot, 0, 0, Qt::AlignTop);

    auto *title = new QLabel(row);
    title->setObjectName(QStringLiteral("title"));
    title->setTextFormat(Qt::PlainText);
    title->setText(item.title + QStringLiteral(" — ") + verdictText(item.verdict));
    QFont f = title->font();
    f.setBold(true);
    title->setFont(f);
    grid->addWidget(title, 0, 1);

    auto *summary = new QLabel(row);
    summary->setObjectName(QStringLiteral("summary"));
    summary->setTextFormat(Qt::PlainText);
    summary->setText(item.summary);
    summary->setWordWrap(true);
    summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid->addWidget(summary, 1, 1);

    if (!item.fix.isEmpty()) {
        auto *fixRow = new QHBoxLayout;
        auto *fix = new QLabel(row);
        fix->setObjectName(QStringLiteral("fix"));
        fix->setTextFormat(Qt::PlainText);
        fix->setText(item.fix);
        fix->setWordWrap(true);
        fix->setFont(Style::monospaceFont());
        fix->setTextInteractionFlags(Qt::TextSelectableByMouse);
        fix->setAutoFillBackground(true);
        fix->setBackgroundRole(QPalette::AlternateBase);
        fix->setMargin(6);
        fixRow->addWidget(fix, 1);
        auto *copy = new QToolButton(row);
        copy->setObjectName(QStringLiteral("copyFix"));
        copy->setText(tr("Copy"));
        copy->setToolTip(tr("Copy the fix"));
        connect(copy, &QToolButton::clicked, this,
                [text = item.fix] { QApplication::clipboard()->setText(text); });
        fixRow->addWidget(copy, 0, Qt::AlignTop);
        grid->addLayout(fixRow, 2, 1);
    }
    grid->setColumnStretch(1, 1);

    // A thin line between rows.
    auto *wrapper = new QWidget;
    auto *v = new QVBoxLayout(wrapper);
    v->setContentsMargins(0, 0, 0, 0);
    v->setSpacing(0);
    v->addWidget(row);
    auto *line = new QFrame(wrapper);
    line->setFrameShape(QFrame::HLine);
    line->setFrameShadow(QFrame::Sunken);
    v->addWidget(line);
    return wrapper;
}

} // namespace Sandbox::Ui
