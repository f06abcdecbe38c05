#pragma once

#include "protocol/result.h"

#include <QList>
#include <QObject>
#include <QPointer>

#include <functional>
#include <sys/types.h>

namespace Sandbox::Engine {

// The prepared cluster every new PostgreSQL database starts from (initdb once per engine data
// dir, ~1 s; then each database is a ~30 MB copy made inside its sandbox). Built as `nobody`, then
// owned by root and read-only to the sandboxes, with a superuser `sandbox_admin` for the engine's set-up, and a non-superuser role `sandbox`
// (LOGIN CREATEDB) owning the database `postgres`, both renamed per database on first start.
class PostgresTemplate final : public QObject
{
    Q_OBJECT

public:
    // `dir`: where the template lives; `builderUid`: who runs initdb when the engine is root and
    // the host has no `nobody` user.
    PostgresTemplate(QString dir, uid_t builderUid, bool dropPrivileges, QObject *parent = nullptr);

    QString path() const { return m_dir; }
    bool isReady() const;
    // Builds the template if it is missing; `done` runs once it is there (or failed).
    void ensure(QObject *context, std::function<void(Result<bool>)> done);

private:
    void finish(const Result<bool> &result);
    void runStep(int step);

    QString m_dir;
    uid_t m_uid;
    bool m_drop;
    bool m_building = false;
    QList<QPair<QPointer<QObject>, std::function<void(Result<bool>)>>> m_waiters;
};

} // namespace Sandbox::Engine
