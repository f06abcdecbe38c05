#include "settingsstore.h"

#include "runtime/offloop.h"

#include <QDir>
#include <QLoggingCategory>

Q_DECLARE_LOGGING_CATEGORY(lcDatabases)

namespace Sandbox::Engine {

SettingsStore::SettingsStore(std::function<QString(const QString &)> stateDirOf, QObject *parent)
    : QObject(parent)
    , m_stateDirOf(std::move(stateDirOf))
{}

SettingsStore::~SettingsStore()
{
    // What the engine was told is on disk before it ends (its queued changes included).
    for (auto it = m_writing.begin(); it != m_writing.end(); ++it) {
        if (it->thread)
            it->thread->wait();
        if (it->next)
            DatabaseSettings::save(m_stateDirOf(it.key()), *it->next);
    }
}

DatabaseSettings SettingsStore::get(const QString &id)
{
    const auto it = m_settings.constFind(id);
    if (it != m_settings.cend())
        return *it;
    const DatabaseSettings loaded = DatabaseSettings::load(m_stateDirOf(id));
    if (!loaded.type.isEmpty())
        m_settings.insert(id, loaded);
    return loaded;
}

void SettingsStore::put(const QString &id, const DatabaseSettings &settings)
{
    m_settings.insert(id, settings);
    if (const auto it = m_writing.find(id); it != m_writing.end())
        it->next = settings; // after the write that runs now
    else
        write(id, settings);
}

void SettingsStore::forget(const QString &id)
{
    m_settings.remove(id);
    if (const auto it = m_writing.find(id); it != m_writing.end())
        it->next.reset();
}

void SettingsStore::write(const QString &id, const DatabaseSettings &settings)
{
    const QString dir = m_stateDirOf(id);
    // Made here, not by the write: a write that ends after the database was deleted finds no
    // directory rather than making one again.
    QDir().mkpath(dir);
    m_writing[id].thread = runOffLoop<bool>(
        this, [dir, settings] { return DatabaseSettings::save(dir, settings); },
        [this, id](bool saved) {
            const std::optional<DatabaseSettings> next = m_writing.take(id).next;
            if (!saved && m_settings.contains(id))
                qCWarning(lcDatabases) << "cannot save the settings of database" << id;
            if (next)
                write(id, *next);
        });
}

} // namespace Sandbox::Engine
