#include "newsandboxdialog.h"

#include "../common/uistyle.h"
#include "enveditor.h"

#include <protocol/sandboxenums.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

NewSandboxDialog::NewSandboxDialog(QWidget *parent)
    : QDialog(parent)
    , m_kind(new QComboBox(this))
    , m_type(new QComboBox(this))
    , m_size(new QComboBox(this))
    , m_name(new QLineEdit(this))
    , m_network(new QCheckBox(tr("Network access"), this))
    , m_networkWarning(new QLabel(this))
    , m_env(new EnvEditor(this))
    , m_envLabel(new QLabel(tr("Environment:"), this))
    , m_error(new QLabel(this))
{
    setWindowTitle(tr("New Sandbox"));
    auto *layout = new QVBoxLayout(this);
    auto *form = new QFormLayout;
    m_form = form;
    m_name->setObjectName(QStringLiteral("name"));
    m_networkWarning->setObjectName(QStringLiteral("networkWarning"));
    m_error->setObjectName(QStringLiteral("error"));
    m_kind->addItem(tr("Coding agent"), toWire(SandboxKind::Agent));
    m_kind->addItem(tr("Database"), toWire(SandboxKind::Database));
    const QList<std::pair<QString, QString>> sizes{
        {QStringLiteral("lite"), tr("lite — 256 MiB, 1/16 CPU")},
        {QStringLiteral("basic"), tr("basic — 1 GiB, 1/4 CPU")},
        {QStringLiteral("standard-1"), tr("standard-1 — 4 GiB, 1/2 CPU")},
        {QStringLiteral("standard-2"), tr("standard-2 — 6 GiB, 1 CPU")},
        {QStringLiteral("standard-3"), tr("standard-3 — 8 GiB, 2 CPUs")},
        {QStringLiteral("standard-4"), tr("standard-4 — 12 GiB, 4 CPUs")},
    };
    for (const auto &[id, text] : sizes)
        m_size->addItem(text, id);
    m_size->setCurrentIndex(2);
    m_name->setPlaceholderText(tr("optional"));
    m_name->setMaxLength(100);
    m_networkWarning->setText(
        tr("Shares this computer's network with the sandbox (no isolation of the network)."));
    m_networkWarning->setWordWrap(true);
    Style::setTextTone(m_networkWarning, Style::Tone::Warning);
    m_networkWarning->hide();
    m_env->setObjectName(QStringLiteral("environment"));
    form->addRow(tr("Kind:"), m_kind);
    form->addRow(tr("Type:"), m_type);
    form->addRow(tr("Size:"), m_size);
    form->addRow(tr("Name:"), m_name);
    form->addRow(QString(), m_network);
    form->addRow(QString(), m_networkWarning);
    form->addRow(m_envLabel, m_env);
    layout->addLayout(form);
    Style::setTextTone(m_error, Style::Tone::Error);
    m_error->setWordWrap(true);
    m_error->hide();
    layout->addWidget(m_error);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Create"));
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &NewSandboxDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &NewSandboxDialog::reject);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &NewSandboxDialog::updateTypes);
    connect(m_network, &QCheckBox::toggled, this, &NewSandboxDialog::updateRows);
    updateTypes();
    resize(520, sizeHint().height());
}

bool NewSandboxDialog::isDatabase() const
{
    return fromWire<SandboxKind>(m_kind->currentData().toString()) == SandboxKind::Database;
}

void NewSandboxDialog::updateTypes()
{
    m_type->clear();
    if (isDatabase()) {
        m_type->addItem(QStringLiteral("PostgreSQL"), toWire(SandboxType::Postgres));
        m_type->addItem(QStringLiteral("SQLite"), toWire(SandboxType::Sqlite));
        m_type->addItem(QStringLiteral("DuckDB"), toWire(SandboxType::DuckDb));
    } else {
        m_type->addItem(QStringLiteral("Claude Code"), toWire(SandboxType::ClaudeCode));
        m_type->addItem(QStringLiteral("OpenCode"), toWire(SandboxType::OpenCode));
        m_type->addItem(QStringLiteral("Codex"), toWire(SandboxType::Codex));
    }
    updateRows();
}

void NewSandboxDialog::updateRows()
{
    const bool agent = !isDatabase();
    // Whole rows, so that a database's form has no blank gap where the agent's fields were.
    m_form->setRowVisible(m_network, agent);
    m_form->setRowVisible(m_networkWarning, agent && m_network->isChecked());
    m_form->setRowVisible(m_env, agent);
    if (isVisible() && layout()) {
        // Fit the rows now shown (the layout first learns that rows went).
        layout()->invalidate();
        layout()->activate();
        resize(width(), sizeHint().height());
    }
}

void NewSandboxDialog::setKind(bool database)
{
    m_kind->setCurrentIndex(database ? 1 : 0);
}

void NewSandboxDialog::setType(const QString &type)
{
    const int i = m_type->findData(type);
    if (i >= 0)
        m_type->setCurrentIndex(i);
}

void NewSandboxDialog::setName(const QString &name)
{
    m_name->setText(name);
}

void NewSandboxDialog::setSize(const QString &size)
{
    const int i = m_size->findData(size);
    if (i >= 0)
        m_size->setCurrentIndex(i);
}

void NewSandboxDialog::setNetwork(bool on)
{
    m_network->setChecked(on);
}

QMap<QString, QString> NewSandboxDialog::parseEnv(QString *error) const
{
    return m_env->variables(error);
}

AgentCreateOptions NewSandboxDialog::agentOptions() const
{
    AgentCreateOptions o;
    o.type = m_type->currentData().toString();
    o.size = m_size->currentData().toString();
    o.name = m_name->text().trimmed();
    o.network = m_network->isChecked();
    QString error;
    o.env = parseEnv(&error);
    return o;
}

DatabaseCreateOptions NewSandboxDialog::databaseOptions() const
{
    DatabaseCreateOptions o;
    o.type = m_type->currentData().toString();
    o.size = m_size->currentData().toString();
    o.name = m_name->text().trimmed();
    return o;
}

void NewSandboxDialog::accept()
{
    QString error;
    if (!isDatabase())
        parseEnv(&error);
    if (!error.isEmpty()) {
        m_error->setText(error);
        m_error->show();
        return;
    }
    QDialog::accept();
}

} // namespace Sandbox::Ui
