#pragma once

#include <client/rpccall.h>
#include <client/types.h>

#include <QPointer>
#include <QWidget>

class QLabel;
class QPushButton;
class QTableView;

namespace Sandbox {
class Client;
}

namespace Sandbox::Ui {

class NetworkLogModel;
class NetworkPolicyEditor;

// A sandbox's network: its policy, editable (sandbox.setNetwork), and the connections it was
// refused, live (sandbox.networkLog, then network.denied notifications), with "Allow" to let a
// refused destination through from then on. docs/protocol.md 3.5 and 4.9.
class NetworkView final : public QWidget
{
    Q_OBJECT

public:
    NetworkView(Client *client, const SandboxInfo &sandbox, QWidget *parent = nullptr);
    ~NetworkView() override;

    NetworkLogModel *model() const { return m_model; }
    NetworkPolicyEditor *editor() const { return m_editor; }
    QTableView *table() const { return m_table; }

    // Reads the policy and the recent denials again.
    void refresh();
    // Sends the editor's policy.
    void apply();
    // Adds the selected denial's allow entry to the policy and sends it.
    void allowSelected();

Q_SIGNALS:
    // The server took a new policy: the sandbox as it is now.
    void sandboxChanged(const Sandbox::SandboxInfo &sandbox);
    void message(const QString &text);

private:
    void send(const NetworkPolicy &policy);
    void updateButtons();
    void showPolicy(const NetworkPolicy &policy);

    QPointer<Client> m_client; // not owned
    QString m_id;
    QLabel *m_summary;             // owned (child)
    NetworkPolicyEditor *m_editor; // owned (child)
    QPushButton *m_apply;          // owned (child)
    QPushButton *m_revert;         // owned (child)
    QTableView *m_table;           // owned (child)
    NetworkLogModel *m_model;      // owned (child)
    QPushButton *m_allow;          // owned (child)
    QLabel *m_empty;               // owned (child)
    RpcCall m_logCall;
    RpcCall m_setCall;
};

} // namespace Sandbox::Ui
