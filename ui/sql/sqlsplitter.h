#pragma once

#include <QList>
#include <QString>

namespace Sandbox::Ui {

// One statement of a script: its text (without the terminating semicolon) and where it sits in
// the script, as UTF-16 offsets (QString indexes) of its first and one-past-last character.
struct SqlStatementRange
{
    QString text;
    int start = 0;
    int end = 0;
};

// Splits SQL text at the semicolons that end statements — not those inside quotes ('...',
// "...", PostgreSQL's E'...' and $tag$...$tag$), comments (--, /* */ nested) or blank pieces.
QList<SqlStatementRange> splitSql(const QString &script);

// The statement that holds `offset` (a cursor): the one it is in, or the closest one before it.
// -1 when there is none.
int statementAt(const QList<SqlStatementRange> &statements, int offset);

// Converts a 1-based position in code points of `text` (what the engine reports) to a UTF-16
// offset into it.
int utf16Offset(const QString &text, int codePointPosition);

} // namespace Sandbox::Ui
