#pragma once

#include "databasesettings.h"

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <functional>
#include <optional>

namespace Sandbox::Engine {

// Every database's settings (DatabaseSettings, STATE/database.json), read from disk once and then
// kept. A change holds at once; its file is written off the event loop (fsync'd and renamed into
// place, which costs milliseconds), one write per database at a time and the last change last —
// as durable as the registry's own record of the sandbox. Pending writes finish before the
// store goes.
class SettingsStore final : public QObject
{
public:
    // `stateDirOf`: a database's state directory by its id.
    explicit SettingsStore(std::function<QString(const QString &id)> stateDirOf,
                           QObject *parent = nullptr);
    ~SettingsStore() override;

    // A database's settings (empty when it has none).
    DatabaseSettings get(const QString &id);
    void put(const QString &id, const DatabaseSettings &settings);
    // The database is gone: its settings too, and no write for it is started any more.
    void forget(const QString &id);

private:
    struct Writing
    {
        QPointer<QThread> thread;
        std::optional<DatabaseSettings> next; // written once `thread` finished
    };
    void write(const QString &id, const DatabaseSettings &settings);

    std::function<QString(const QString &)> m_stateDirOf;
    QHash<QString, DatabaseSettings> m_settings;
    QHash<QString, Writing> m_writing;
};

} // namespace Sandbox::Engine
