#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QString>

#include <sqlite3.h>

namespace Sandbox::Engine {

// A prepared statement that finalizes itself.
class SqliteStatement final
{
public:
    SqliteStatement(sqlite3 *db, const char *sql)
    {
        m_rc = sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr);
    }
    ~SqliteStatement() { sqlite3_finalize(m_stmt); }
    SqliteStatement(const SqliteStatement &) = delete;
    SqliteStatement &operator=(const SqliteStatement &) = delete;

    bool ok() const { return m_rc == SQLITE_OK; }
    void bind(int i, const QString &v)
    {
        const QByteArray u = v.toUtf8();
        sqlite3_bind_text(m_stmt, i, u.constData(), int(u.size()), SQLITE_TRANSIENT);
    }
    void bind(int i, const QByteArray &v)
    {
        sqlite3_bind_blob(m_stmt, i, v.constData(), int(v.size()), SQLITE_TRANSIENT);
    }
    void bind(int i, qint64 v) { sqlite3_bind_int64(m_stmt, i, v); }
    void bind(int i, const QDateTime &v)
    {
        if (v.isValid())
            sqlite3_bind_int64(m_stmt, i, v.toMSecsSinceEpoch());
        else
            sqlite3_bind_null(m_stmt, i);
    }
    void bind(int i, double v) { sqlite3_bind_double(m_stmt, i, v); }
    void bindNull(int i) { sqlite3_bind_null(m_stmt, i); }
    int step() { return sqlite3_step(m_stmt); }
    // Makes the statement ready to run again with new bindings.
    void reset()
    {
        sqlite3_reset(m_stmt);
        sqlite3_clear_bindings(m_stmt);
    }
    bool isNull(int c) const { return sqlite3_column_type(m_stmt, c) == SQLITE_NULL; }
    QString text(int c) const
    {
        return QString::fromUtf8(reinterpret_cast<const char *>(sqlite3_column_text(m_stmt, c)),
                                 sqlite3_column_bytes(m_stmt, c));
    }
    QByteArray blob(int c) const
    {
        return QByteArray(static_cast<const char *>(sqlite3_column_blob(m_stmt, c)),
                          sqlite3_column_bytes(m_stmt, c));
    }
    qint64 integer(int c) const { return sqlite3_column_int64(m_stmt, c); }
    double real(int c) const { return sqlite3_column_double(m_stmt, c); }
    QDateTime time(int c) const
    {
        if (sqlite3_column_type(m_stmt, c) == SQLITE_NULL)
            return {};
        return QDateTime::fromMSecsSinceEpoch(sqlite3_column_int64(m_stmt, c), Qt::UTC);
    }

private:
    sqlite3_stmt *m_stmt = nullptr;
    int m_rc = SQLITE_ERROR;
};

} // namespace Sandbox::Engine
