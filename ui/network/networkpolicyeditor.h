#pragma once

#include <client/networktypes.h>

#include <QWidget>

class QButtonGroup;
class QLabel;
class QPlainTextEdit;
class QRadioButton;

namespace Sandbox::Ui {

// Edits a sandbox's network policy (docs/protocol.md 3.5): no network, the public internet, or
// only the hosts listed; an allow list (one entry per line; with the public internet it adds
// what the internet does not reach, e.g. 127.0.0.1:8080) and a deny list. It only edits: the
// owner sends the policy (sandbox.setNetwork) and shows the server's verdict with showError().
class NetworkPolicyEditor final : public QWidget
{
    Q_OBJECT

public:
    explicit NetworkPolicyEditor(QWidget *parent = nullptr);

    // Shows `policy` as the saved one (not modified).
    void setPolicy(const NetworkPolicy &policy);
    // What the widgets say now.
    NetworkPolicy policy() const;
    bool isModified() const { return policy() != m_saved; }
    const NetworkPolicy &savedPolicy() const { return m_saved; }
    // The server refused the policy: its message under the lists (empty: none).
    void showError(const QString &message);

Q_SIGNALS:
    void changed();

private:
    void updateEnabled();

    NetworkPolicy m_saved;
    QButtonGroup *m_mode;    // owned (child)
    QRadioButton *m_off;     // owned (child)
    QRadioButton *m_public;  // owned (child)
    QRadioButton *m_list;    // owned (child)
    QLabel *m_allowLabel;    // owned (child)
    QPlainTextEdit *m_allow; // owned (child)
    QPlainTextEdit *m_deny;  // owned (child)
    QLabel *m_error;         // owned (child)
};

} // namespace Sandbox::Ui
