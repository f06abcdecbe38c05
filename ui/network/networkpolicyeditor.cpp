#include "networkpolicyeditor.h"

#include <common/uistyle.h>

#include <QButtonGroup>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QRadioButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {

QStringList lines(const QPlainTextEdit *edit)
{
    QStringList out;
    for (const QString &line : edit->toPlainText().split(u'\n')) {
        const QString t = line.trimmed();
        if (!t.isEmpty() && !out.contains(t, Qt::CaseInsensitive))
            out.append(t);
    }
    return out;
}

QPlainTextEdit *listEdit(const QString &placeholder, QWidget *parent)
{
    auto *edit = new QPlainTextEdit(parent);
    edit->setPlaceholderText(placeholder);
    edit->setTabChangesFocus(true);
    edit->setLineWrapMode(QPlainTextEdit::NoWrap);
    edit->setMinimumHeight(70);
    return edit;
}

} // namespace

NetworkPolicyEditor::NetworkPolicyEditor(QWidget *parent)
    : QWidget(parent)
    , m_mode(new QButtonGroup(this))
    , m_off(new QRadioButton(tr("No network"), this))
    , m_public(new QRadioButton(tr("The public internet"), this))
    , m_list(new QRadioButton(tr("Only the hosts allowed below"), this))
    , m_allowLabel(new QLabel(this))
    , m_allow(listEdit(tr("api.example.com\n*.github.com\nregistry.npmjs.org:443"), this))
    , m_deny(listEdit(tr("tracker.example.com"), this))
    , m_error(new QLabel(this))
{
    m_off->setToolTip(tr("Nothing leaves the sandbox (an agent still reaches its model API "
                         "through the engine's gateway)."));
    m_public->setToolTip(tr("Any public host. Never this computer, its local networks or cloud "
                            "metadata addresses."));
    m_list->setToolTip(tr("Only what the allow list names."));
    m_mode->addButton(m_off, int(NetworkPolicy::Mode::Off));
    m_mode->addButton(m_public, int(NetworkPolicy::Mode::Public));
    m_mode->addButton(m_list, int(NetworkPolicy::Mode::List));

    auto *modes = new QHBoxLayout;
    modes->addWidget(m_off);
    modes->addWidget(m_public);
    modes->addWidget(m_list);
    modes->addStretch();

    auto *denyLabel = new QLabel(tr("Denied (always wins):"), this);
    auto *hint = new QLabel(tr("One entry per line: <i>host</i>, <i>*.domain</i>, "
                               "<i>host:port</i>, an address, or <i>network/prefix</i>. "
                               "This computer's services need an exact "
                               "<i>127.0.0.1:PORT</i>."),
                            this);
    hint->setWordWrap(true);
    hint->setForegroundRole(QPalette::PlaceholderText);
    m_error->setWordWrap(true);
    m_error->setTextFormat(Qt::PlainText);
    QPalette p = m_error->palette();
    p.setColor(QPalette::WindowText, Style::statusColor(QStringLiteral("error")));
    m_error->setPalette(p);
    m_error->hide();

    auto *lists = new QGridLayout;
    lists->addWidget(m_allowLabel, 0, 0);
    lists->addWidget(denyLabel, 0, 1);
    lists->addWidget(m_allow, 1, 0);
    lists->addWidget(m_deny, 1, 1);
    lists->setColumnStretch(0, 1);
    lists->setColumnStretch(1, 1);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(modes);
    layout->addLayout(lists);
    layout->addWidget(hint);
    layout->addWidget(m_error);

    connect(m_mode, &QButtonGroup::idToggled, this, [this](int, bool checked) {
        if (!checked)
            return;
        updateEnabled();
        Q_EMIT changed();
    });
    connect(m_allow, &QPlainTextEdit::textChanged, this, &NetworkPolicyEditor::changed);
    connect(m_deny, &QPlainTextEdit::textChanged, this, &NetworkPolicyEditor::changed);
    setPolicy(NetworkPolicy::off());
}

void NetworkPolicyEditor::setPolicy(const NetworkPolicy &policy)
{
    m_saved = policy;
    {
        const QSignalBlocker a(m_allow), d(m_deny), m(m_mode);
        m_mode->button(int(policy.mode))->setChecked(true);
        m_allow->setPlainText(policy.allow.join(u'\n'));
        m_deny->setPlainText(policy.deny.join(u'\n'));
    }
    showError({});
    updateEnabled();
    Q_EMIT changed();
}

NetworkPolicy NetworkPolicyEditor::policy() const
{
    NetworkPolicy p;
    p.mode = NetworkPolicy::Mode(m_mode->checkedId());
    if (p.mode == NetworkPolicy::Mode::Off)
        return p;
    p.allow = lines(m_allow);
    p.allow.removeAll(QStringLiteral("*"));
    p.deny = lines(m_deny);
    if (p.mode == NetworkPolicy::Mode::List && p.allow.isEmpty())
        p.mode = NetworkPolicy::Mode::Off; // an empty allow list is no network
    return p;
}

void NetworkPolicyEditor::showError(const QString &message)
{
    m_error->setText(message);
    m_error->setVisible(!message.isEmpty());
}

void NetworkPolicyEditor::updateEnabled()
{
    const auto mode = NetworkPolicy::Mode(m_mode->checkedId());
    const bool on = mode != NetworkPolicy::Mode::Off;
    m_allow->setEnabled(on);
    m_deny->setEnabled(on);
    m_allowLabel->setText(mode == NetworkPolicy::Mode::List
                              ? tr("Allowed:")
                              : tr("Also allowed (beyond the internet, e.g. 127.0.0.1:8080):"));
}

} // namespace Sandbox::Ui
