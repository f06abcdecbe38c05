#include "connectiondialog.h"

#include "../common/uistyle.h"

#include "secretstore.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {
constexpr int IdRole = Qt::UserRole + 1;
}

ConnectionDialog::ConnectionDialog(ProfileStore *profiles, SecretStore *secrets,
                                   const QString &currentId, QWidget *parent)
    : QDialog(parent)
    , m_profiles(profiles)
    , m_secrets(secrets)
    , m_list(new QListWidget(this))
    , m_details(new QStackedWidget(this))
    , m_name(new QLineEdit(this))
    , m_url(new QLineEdit(this))
    , m_key(new QLineEdit(this))
    , m_keyHint(new QLabel(this))
    , m_localDataDir(new QLineEdit(this))
    , m_localKey(new QLineEdit(this))
    , m_error(new QLabel(this))
    , m_removeButton(new QPushButton(tr("Remove"), this))
    , m_buttons(new QDialogButtonBox(QDialogButtonBox::Cancel, this))
{
    setWindowTitle(tr("Connect"));
    auto *layout = new QVBoxLayout(this);
    auto *row = new QHBoxLayout;
    auto *left = new QVBoxLayout;
    left->addWidget(m_list, 1);
    auto *listButtons = new QHBoxLayout;
    auto *addButton = new QPushButton(tr("Add Remote…"), this);
    listButtons->addWidget(addButton);
    listButtons->addWidget(m_removeButton);
    left->addLayout(listButtons);
    row->addLayout(left, 1);

    // The local engine: nothing to set up, unless it runs with another data directory or as
    // another user (root), whose key the app cannot read.
    auto *localPage = new QWidget(this);
    auto *localForm = new QFormLayout(localPage);
    auto *localText
        = new QLabel(tr("Sandboxes run on this computer, in bubblewrap, through the local engine "
                        "(sandboxd). It is started when it does not run yet, and its API key is "
                        "read from its data directory."),
                     localPage);
    localText->setWordWrap(true);
    localForm->addRow(localText);
    m_localDataDir->setObjectName(QStringLiteral("localDataDir"));
    m_localDataDir->setPlaceholderText(ConnectionProfile::defaultDataDir());
    auto *browse = new QPushButton(tr("Browse…"), localPage);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this,
                                                              tr("The Engine's Data Directory"),
                                                              m_localDataDir->text());
        if (!dir.isEmpty())
            m_localDataDir->setText(dir);
    });
    auto *dirRow = new QHBoxLayout;
    dirRow->addWidget(m_localDataDir, 1);
    dirRow->addWidget(browse);
    localForm->addRow(tr("Data directory:"), dirRow);
    m_localKey->setObjectName(QStringLiteral("localKey"));
    m_localKey->setEchoMode(QLineEdit::Password);
    m_localKey->setPlaceholderText(tr("only if the engine runs as another user"));
    localForm->addRow(tr("API key:"), m_localKey);
    auto *localHint = new QLabel(
        tr("An engine run by root keeps its key in /var/lib/sandboxd/api-key, which only root can "
           "read: paste the output of <code>sudo cat /var/lib/sandboxd/api-key</code> above. It is "
           "kept in the desktop keyring, never in the settings."),
        localPage);
    localHint->setWordWrap(true);
    Style::setTextTone(localHint, Style::Tone::Muted);
    localForm->addRow(localHint);
    auto *remotePage = new QWidget(this);
    auto *form = new QFormLayout(remotePage);
    m_name->setPlaceholderText(tr("e.g. Team sandboxes"));
    m_url->setPlaceholderText(tr("https://sandbox.example.workers.dev"));
    m_key->setEchoMode(QLineEdit::Password);
    m_key->setPlaceholderText(tr("API key"));
    m_keyHint->setWordWrap(true);
    Style::setTextTone(m_keyHint, Style::Tone::Muted);
    form->addRow(tr("Name:"), m_name);
    form->addRow(tr("URL:"), m_url);
    form->addRow(tr("API key:"), m_key);
    form->addRow(QString(), m_keyHint);
    m_details->addWidget(localPage);
    m_details->addWidget(remotePage);
    row->addWidget(m_details, 2);
    layout->addLayout(row, 1);

    Style::setTextTone(m_error, Style::Tone::Error);
    m_error->setWordWrap(true);
    m_error->hide();
    layout->addWidget(m_error);
    QPushButton *connectButton = m_buttons->addButton(tr("Connect"), QDialogButtonBox::AcceptRole);
    connectButton->setDefault(true);
    layout->addWidget(m_buttons);

    connect(m_buttons, &QDialogButtonBox::accepted, this, &ConnectionDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &ConnectionDialog::reject);
    connect(addButton, &QPushButton::clicked, this, &ConnectionDialog::addProfile);
    connect(m_removeButton, &QPushButton::clicked, this, &ConnectionDialog::removeSelected);
    connect(m_list, &QListWidget::currentRowChanged, this, &ConnectionDialog::onSelectionChanged);
    connect(m_list, &QListWidget::itemDoubleClicked, this, &ConnectionDialog::accept);

    resize(640, 320);
    reloadList(currentId);
}

ConnectionDialog::~ConnectionDialog() = default;

void ConnectionDialog::reloadList(const QString &selectId)
{
    m_list->clear();
    for (const StoredProfile &p : m_profiles->profiles()) {
        auto *item = new QListWidgetItem(p.local ? p.name
                                                 : QStringLiteral("%1\n%2").arg(p.name,
                                                                                p.url.toString()),
                                         m_list);
        item->setData(IdRole, p.id);
    }
    selectProfile(selectId);
}

void ConnectionDialog::selectProfile(const QString &id)
{
    for (int i = 0; i < m_list->count(); ++i) {
        if (m_list->item(i)->data(IdRole).toString() == id) {
            m_list->setCurrentRow(i);
            return;
        }
    }
    m_list->setCurrentRow(0);
}

void ConnectionDialog::onSelectionChanged()
{
    m_error->hide();
    QListWidgetItem *item = m_list->currentItem();
    const StoredProfile p = item ? m_profiles->profile(item->data(IdRole).toString())
                                 : StoredProfile();
    const bool remote = p.isValid() && !p.local;
    m_details->setCurrentIndex(remote || (item && item->data(IdRole).toString().isEmpty()) ? 1 : 0);
    m_removeButton->setEnabled(remote);
    if (!item)
        return;
    m_editingId = item->data(IdRole).toString();
    if (p.isValid() && p.local)
        m_localDataDir->setText(p.dataDir);
    if (remote) {
        m_name->setText(p.name);
        m_url->setText(p.url.toString());
        m_key->clear();
        m_keyHint->setText(
            tr("Leave empty to keep the stored key. Keys are kept in the desktop keyring "
               "when there is one, else in a file only you can read."));
    }
}

void ConnectionDialog::addProfile()
{
    auto *item = new QListWidgetItem(tr("New remote"), m_list);
    item->setData(IdRole, QString());
    m_list->setCurrentItem(item);
    m_details->setCurrentIndex(1);
    m_editingId.clear();
    m_name->clear();
    m_url->clear();
    m_key->clear();
    m_keyHint->setText(
        tr("Kept in the desktop keyring when there is one, else in a file only you can read."));
    m_name->setFocus();
}

void ConnectionDialog::setFields(const QString &name, const QString &url, const QString &key)
{
    m_name->setText(name);
    m_url->setText(url);
    m_key->setText(key);
}

void ConnectionDialog::removeSelected()
{
    QListWidgetItem *item = m_list->currentItem();
    if (!item)
        return;
    const StoredProfile p = m_profiles->profile(item->data(IdRole).toString());
    if (!p.isValid() || p.local)
        return;
    m_profiles->remove(p.id);
    m_secrets->remove(p.secretName(), this, [](const std::optional<Error> &) {});
    reloadList(QString::fromLatin1(ProfileStore::LocalId));
}

QString ConnectionDialog::validate(QUrl *url) const
{
    const QUrl u = QUrl::fromUserInput(m_url->text().trimmed());
    if (!u.isValid() || u.host().isEmpty()
        || (u.scheme() != QLatin1String("https") && u.scheme() != QLatin1String("http")))
        return tr("The URL must be http(s)://HOST[:PORT].");
    if (!u.userInfo().isEmpty() || u.hasQuery())
        return tr("Put the API key in its own field, not in the URL.");
    if (u.scheme() == QLatin1String("http") && u.host() != QLatin1String("localhost")
        && !u.host().startsWith(QStringLiteral("127.")))
        return tr("Use https:// for a remote server: the API key would travel in clear text.");
    *url = u;
    return {};
}

void ConnectionDialog::accept()
{
    if (m_busy)
        return;
    if (m_details->currentIndex() == 0) {
        StoredProfile local = ProfileStore::localProfile();
        local.dataDir = m_localDataDir->text().trimmed();
        m_chosen = m_profiles->save(local);
        m_profiles->setLastUsedId(m_chosen.id);
        const QString key = m_localKey->text().trimmed();
        if (key.isEmpty()) {
            QDialog::accept();
            return;
        }
        m_busy = true;
        m_buttons->setEnabled(false);
        m_secrets->write(m_chosen.secretName(), key, this, [this](const std::optional<Error> &error) {
            m_busy = false;
            m_buttons->setEnabled(true);
            m_localKey->clear();
            if (error) {
                m_error->setText(tr("Cannot store the key: %1").arg(error->message));
                m_error->show();
                return;
            }
            QDialog::accept();
        });
        return;
    }
    QUrl url;
    if (const QString why = validate(&url); !why.isEmpty()) {
        m_error->setText(why);
        m_error->show();
        return;
    }
    const QString key = m_key->text().trimmed();
    if (m_editingId.isEmpty() && key.isEmpty()) {
        m_error->setText(tr("A new profile needs its API key."));
        m_error->show();
        return;
    }
    StoredProfile p;
    p.id = m_editingId;
    p.name = m_name->text().trimmed().isEmpty() ? url.host() : m_name->text().trimmed();
    p.url = url;
    p = m_profiles->save(p);
    m_profiles->setLastUsedId(p.id);
    m_chosen = p;
    if (key.isEmpty()) {
        QDialog::accept();
        return;
    }
    m_busy = true;
    m_buttons->setEnabled(false);
    m_secrets->write(p.secretName(), key, this, [this](const std::optional<Error> &error) {
        m_busy = false;
        m_buttons->setEnabled(true);
        m_key->clear();
        if (error) {
            m_error->setText(tr("Cannot store the key: %1").arg(error->message));
            m_error->show();
            return;
        }
        QDialog::accept();
    });
}

} // namespace Sandbox::Ui
