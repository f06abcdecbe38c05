#include "problemcard.h"

#include "../common/uistyle.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

ProblemCard::ProblemCard(QWidget *parent)
    : QFrame(parent)
    , m_title(new QLabel(this))
    , m_text(new QLabel(this))
    , m_fix(new QPushButton(this))
    , m_details(new QToolButton(this))
    , m_copy(new QPushButton(tr("Copy"), this))
    , m_raw(new QLabel(this))
{
    setObjectName(QStringLiteral("problemCard"));
    // Its own background (the tone's), not the list's base it would inherit as a row's widget.
    setBackgroundRole(QPalette::Window);
    setForegroundRole(QPalette::WindowText);
    Style::setBackgroundTone(this, Style::Tone::Error);
    m_title->setObjectName(QStringLiteral("problemTitle"));
    m_title->setTextFormat(Qt::PlainText);
    m_title->setWordWrap(true);
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    Style::setTextTone(m_title, Style::Tone::Error);
    m_text->setObjectName(QStringLiteral("problemText"));
    m_text->setTextFormat(Qt::PlainText);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_fix->setObjectName(QStringLiteral("problemFix"));
    m_details->setObjectName(QStringLiteral("problemDetails"));
    m_details->setText(tr("Details"));
    m_details->setCheckable(true);
    m_details->setAutoRaise(true);
    m_details->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_details->setArrowType(Qt::RightArrow);
    m_details->setToolTip(tr("The agent's own words"));
    m_copy->setObjectName(QStringLiteral("problemCopy"));
    m_copy->setToolTip(tr("Copy the agent's own words"));
    m_copy->hide();
    // The raw words: as they came, in a fixed-pitch font on the palette's base, selectable.
    m_raw->setObjectName(QStringLiteral("problemRaw"));
    m_raw->setTextFormat(Qt::PlainText);
    m_raw->setWordWrap(true);
    m_raw->setFont(Style::monospaceFont());
    m_raw->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_raw->setFrameShape(QFrame::StyledPanel);
    m_raw->setBackgroundRole(QPalette::Base);
    m_raw->setForegroundRole(QPalette::Text);
    m_raw->setAutoFillBackground(true);
    m_raw->setMargin(4);
    m_raw->hide();

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 6, 10, 6);
    layout->setSpacing(4);
    layout->addWidget(m_title);
    layout->addWidget(m_text);
    auto *actions = new QHBoxLayout;
    actions->setContentsMargins(0, 0, 0, 0);
    actions->addWidget(m_fix);
    actions->addWidget(m_details);
    actions->addWidget(m_copy);
    actions->addStretch(1);
    layout->addLayout(actions);
    layout->addWidget(m_raw);

    connect(m_fix, &QPushButton::clicked, this, &ProblemCard::fixClicked);
    connect(m_details, &QToolButton::toggled, this, &ProblemCard::showDetails);
    connect(m_copy, &QPushButton::clicked, this,
            [this] { QGuiApplication::clipboard()->setText(m_raw->text()); });
}

void ProblemCard::setProblem(const QString &title, const QString &text, const QString &raw,
                             const QString &fix)
{
    m_title->setText(title);
    m_text->setText(text);
    m_fix->setText(fix);
    m_fix->setVisible(!fix.isEmpty());
    m_raw->setText(raw);
    m_details->setVisible(!raw.isEmpty());
    if (raw.isEmpty())
        m_details->setChecked(false);
    Q_EMIT heightChanged();
}

void ProblemCard::showDetails(bool on)
{
    m_details->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    m_raw->setVisible(on);
    m_copy->setVisible(on);
    Q_EMIT heightChanged();
}

} // namespace Sandbox::Ui
