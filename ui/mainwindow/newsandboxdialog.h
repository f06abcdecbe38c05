#pragma once

#include <client/types.h>

#include <QDialog>

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;

namespace Sandbox::Ui {

class EnvEditor;

// Asks what to create: an agent (type, size, name, network, environment) or a database
// (type, size, name). Environment values (API keys) go only into the create call and are never
// shown in plain text.
class NewSandboxDialog final : public QDialog
{
    Q_OBJECT

public:
    explicit NewSandboxDialog(QWidget *parent = nullptr);

    bool isDatabase() const;
    AgentCreateOptions agentOptions() const;
    DatabaseCreateOptions databaseOptions() const;

    void setKind(bool database);
    void setType(const QString &type);
    void setName(const QString &name);
    void setSize(const QString &size);
    void setNetwork(bool on);

    void accept() override;

private:
    void updateTypes();
    void updateRows();
    QMap<QString, QString> parseEnv(QString *error) const;

    QFormLayout *m_form = nullptr; // owned by the dialog's layout
    QComboBox *m_kind;
    QComboBox *m_type;
    QComboBox *m_size;
    QLineEdit *m_name;
    QCheckBox *m_network;
    QLabel *m_networkWarning;
    EnvEditor *m_env;
    QLabel *m_envLabel;
    QLabel *m_error;
};

} // namespace Sandbox::Ui
