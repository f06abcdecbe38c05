#pragma once

#include <QMap>
#include <QWidget>

class QLineEdit;
class QVBoxLayout;

namespace Sandbox::Ui {

// The environment of a new sandbox as rows of NAME and value. Values are model keys and
// passwords more often than not: every value field is a password field, so a value is never on
// the screen in plain text (not while typed, not when pasted). "NAME=value" typed or pasted into
// a name field (one or many lines, as in a .env file) is split into rows, the values going
// straight into their masked fields.
class EnvEditor final : public QWidget
{
    Q_OBJECT

public:
    explicit EnvEditor(QWidget *parent = nullptr);

    // The variables; on a bad name, `error` says which row and the map is empty.
    QMap<QString, QString> variables(QString *error) const;
    void addVariable(const QString &name, const QString &value);
    int rowCount() const { return int(m_rows.size()); }

    static constexpr int kMaxRows = 64;

private:
    struct Row
    {
        QWidget *widget;
        QLineEdit *name;
        QLineEdit *value;
    };
    Row &addRow();
    void removeRow(QWidget *widget);
    void splitPasted(QLineEdit *name, const QString &text);
    void updateAddButton();

    QVBoxLayout *m_rowsLayout;
    QWidget *m_addButton;
    QList<Row> m_rows;
};

} // namespace Sandbox::Ui
