#pragma once

#include "profilestore.h"

#include <QDialog>

class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QStackedWidget;

namespace Sandbox::Ui {

class SecretStore;

// Picks a connection: the local engine, or a remote endpoint (e.g. the Cloudflare Worker) with
// a URL and an API key. Several remote profiles are remembered (ProfileStore); a key typed here
// goes to the SecretStore (keyring or 0600 file), never to the settings. An empty key field on a
// saved profile keeps the stored key.
class ConnectionDialog final : public QDialog
{
    Q_OBJECT

public:
    ConnectionDialog(ProfileStore *profiles, SecretStore *secrets, const QString &currentId,
                     QWidget *parent = nullptr);
    ~ConnectionDialog() override;

    // After accept(): the profile to connect with (its key, if typed, is stored by then).
    StoredProfile chosenProfile() const { return m_chosen; }

    // For tests and keyboard users: select by id, fill the fields.
    void selectProfile(const QString &id);
    void setFields(const QString &name, const QString &url, const QString &key);
    void addProfile();
    void accept() override;

private:
    void reloadList(const QString &selectId);
    void onSelectionChanged();
    void removeSelected();
    QString validate(QUrl *url) const;

    ProfileStore *m_profiles; // not owned
    SecretStore *m_secrets;   // not owned
    QListWidget *m_list;
    QStackedWidget *m_details;
    QLineEdit *m_name;
    QLineEdit *m_url;
    QLineEdit *m_key;
    QLabel *m_keyHint;
    QLineEdit *m_localDataDir;
    QLineEdit *m_localKey;
    QLabel *m_error;
    QPushButton *m_removeButton;
    QDialogButtonBox *m_buttons;
    StoredProfile m_chosen;
    QString m_editingId; // "" for a new profile
    bool m_busy = false;
};

} // namespace Sandbox::Ui
