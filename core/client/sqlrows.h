#pragma once

#include <protocol/result.h>

#include <QByteArray>
#include <QJsonArray>
#include <QJsonValue>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QVariant>

namespace Sandbox {

// A page of rows (docs/protocol.md 4.3.3, rowMode "array"), decoded from its JSON text by a
// reader made for it: numbers, booleans, NULL and strings go straight into flat cells that point
// into the text, instead of a tree of JSON values with an allocation per row and per value.
// Nested values (arrays, objects, the {"$int"|"$bytes"|"$float": ...} forms of 4.3.5) keep
// their text and are read when asked for. The text stays as it came (toJson()), so the page can
// be stored and decoded again without being written anew. Copies share the data.
class SqlRows final
{
public:
    SqlRows() = default;

    // Decodes `text`, a JSON array of arrays of values. Text that is not one — truncated,
    // malformed, rows that are not arrays, values nested deeper than Json::MaxDepth — is an
    // error that says where, never a partial page. Strings are taken as UTF-8 as they are
    // (the client checks a message before it gets here, see Json::validate).
    static Result<SqlRows> fromJson(QByteArray text);
    // The rows of a JSON array of arrays already parsed (REST, a transaction's results).
    static Result<SqlRows> fromArray(const QJsonArray &rows);

    qsizetype size() const { return m_rowStart.isEmpty() ? 0 : m_rowStart.size() - 1; }
    bool isEmpty() const { return size() == 0; }
    // How many values row `row` has (0 for a row that is not there).
    qsizetype columnCount(qsizetype row) const;

    // A value as JSON reads it (what QJsonDocument would have built): Undefined for a cell that
    // is not there.
    QJsonValue value(qsizetype row, qsizetype column) const;
    QJsonArray row(qsizetype row) const;
    // NULL (or no such cell).
    bool isNull(qsizetype row, qsizetype column) const;
    // As SqlValue::toVariant() and SqlValue::toText() say, without a JSON value for a scalar.
    QVariant variant(qsizetype row, qsizetype column) const;
    QString text(qsizetype row, qsizetype column, bool bytesAsHex = true) const;

    // The rows' JSON text as it came.
    const QByteArray &toJson() const { return m_text; }

private:
    enum class Kind : quint8 { Null, False, True, Integer, Double, String, Escaped, Nested };
    struct Cell
    {
        Kind kind = Kind::Null;
        quint32 length = 0; // String, Escaped, Nested: bytes of the text at `offset`
        union {
            qint64 integer = 0;
            double number;
            qint64 offset; // String, Nested: in m_text; Escaped: in m_unescaped
        };
    };
    class Reader;

    const Cell *cell(qsizetype row, qsizetype column) const;

    QByteArray m_text;
    QByteArray m_unescaped;      // the strings that had escapes, unescaped (UTF-8)
    QList<Cell> m_cells;         // row after row
    QList<qsizetype> m_rowStart; // each row's first cell, then one past the last
};

} // namespace Sandbox

Q_DECLARE_METATYPE(Sandbox::SqlRows)
