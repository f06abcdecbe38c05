#include "enveditor.h"

#include "../common/uistyle.h"

#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QToolButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {
bool isName(const QString &name)
{
    static const QRegularExpression re(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
    return re.match(name).hasMatch();
}
} // namespace

EnvEditor::EnvEditor(QWidget *parent)
    : QWidget(parent)
    , m_rowsLayout(new QVBoxLayout)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_rowsLayout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(m_rowsLayout);
    auto *add = new QPushButton(tr("Add Variable"), this);
    add->setObjectName(QStringLiteral("addVariable"));
    add->setToolTip(tr("A variable for the sandbox; NAME=value lines can be pasted into a name"));
    connect(add, &QPushButton::clicked, this, [this] {
        if (rowCount() < kMaxRows)
            addRow().name->setFocus();
    });
    auto *addRowLayout = new QHBoxLayout;
    addRowLayout->addWidget(add);
    addRowLayout->addStretch(1);
    layout->addLayout(addRowLayout);
    m_addButton = add;
    addRow();
}

EnvEditor::Row &EnvEditor::addRow()
{
    auto *widget = new QWidget(this);
    auto *row = new QHBoxLayout(widget);
    row->setContentsMargins(0, 0, 0, 0);
    auto *name = new QLineEdit(widget);
    name->setObjectName(QStringLiteral("envName"));
    name->setPlaceholderText(tr("NAME, e.g. ANTHROPIC_API_KEY"));
    name->setMaxLength(32768); // room for pasted NAME=value lines
    auto *value = new QLineEdit(widget);
    value->setObjectName(QStringLiteral("envValue"));
    value->setPlaceholderText(tr("value (hidden)"));
    value->setEchoMode(QLineEdit::Password);
    value->setMaxLength(32768);
    auto *remove = new QToolButton(widget);
    remove->setIcon(Style::icon("list-remove", QStyle::SP_DialogDiscardButton, remove));
    remove->setToolTip(tr("Remove this variable"));
    remove->setAutoRaise(true);
    row->addWidget(name, 3);
    row->addWidget(value, 2);
    row->addWidget(remove);
    m_rowsLayout->addWidget(widget);
    m_rows.append({widget, name, value});
    connect(remove, &QToolButton::clicked, this, [this, widget] { removeRow(widget); });
    connect(name, &QLineEdit::textEdited, this,
            [this, name](const QString &text) { splitPasted(name, text); });
    updateAddButton();
    return m_rows.last();
}

void EnvEditor::removeRow(QWidget *widget)
{
    for (qsizetype i = 0; i < m_rows.size(); ++i) {
        if (m_rows[i].widget != widget)
            continue;
        if (m_rows.size() == 1) {
            // The last row is emptied, not removed: there is always a place to type.
            m_rows[i].name->clear();
            m_rows[i].value->clear();
            return;
        }
        m_rows.removeAt(i);
        widget->deleteLater();
        widget->hide();
        updateAddButton();
        return;
    }
}

void EnvEditor::splitPasted(QLineEdit *name, const QString &text)
{
    // QLineEdit turns pasted newlines into spaces; either separates lines here.
    if (!text.contains(u'='))
        return;
    const QStringList lines = text.split(QRegularExpression(
                                             QStringLiteral("[\\n ]+(?=[A-Za-z_][A-Za-z0-9_]*=)")),
                                         Qt::SkipEmptyParts);
    QLineEdit *target = name;
    for (const QString &line : lines) {
        const qsizetype eq = line.indexOf(u'=');
        const QString key = line.left(eq).trimmed();
        const QString value = line.mid(eq + 1).trimmed();
        if (!target) {
            if (rowCount() >= kMaxRows)
                break;
            target = addRow().name;
        }
        target->setText(key);
        for (const Row &row : std::as_const(m_rows)) {
            if (row.name == target) {
                row.value->setText(value);
                if (value.isEmpty())
                    row.value->setFocus();
            }
        }
        target = nullptr;
    }
}

void EnvEditor::updateAddButton()
{
    m_addButton->setEnabled(rowCount() < kMaxRows);
}

void EnvEditor::addVariable(const QString &name, const QString &value)
{
    for (const Row &row : std::as_const(m_rows)) {
        if (row.name->text().trimmed().isEmpty() && row.value->text().isEmpty()) {
            row.name->setText(name);
            row.value->setText(value);
            return;
        }
    }
    if (rowCount() >= kMaxRows)
        return;
    Row &row = addRow();
    row.name->setText(name);
    row.value->setText(value);
}

QMap<QString, QString> EnvEditor::variables(QString *error) const
{
    QMap<QString, QString> env;
    for (qsizetype i = 0; i < m_rows.size(); ++i) {
        const QString name = m_rows[i].name->text().trimmed();
        const QString value = m_rows[i].value->text();
        if (name.isEmpty() && value.isEmpty())
            continue;
        if (!isName(name)) {
            if (error)
                *error = tr("Environment row %1: the name must be letters, digits and _ and "
                            "not start with a digit")
                             .arg(i + 1);
            return {};
        }
        env.insert(name, value);
    }
    return env;
}

} // namespace Sandbox::Ui
