#pragma once

#include "../editor/codeeditor.h"

#include <Qsci/qscistyle.h>

#include <QMap>
#include <QStringList>

namespace Sandbox::Ui {

class SqlLexer;
class SqlCompletion;

// The SQL editor: the app's CodeEditor with the dialect's keywords, completion of tables and
// columns from the live schema, Ctrl+Enter to run the statement under the cursor
// (Ctrl+Shift+Enter: all), and server errors marked where they happened (squiggle, margin marker,
// annotation).
class SqlEditor final : public CodeEditor
{
    Q_OBJECT

public:
    explicit SqlEditor(QWidget *parent = nullptr);
    ~SqlEditor() override;

    // postgres | sqlite | duckdb
    void setDialect(const QString &engine);
    QString dialect() const { return m_dialect; }
    // Tables and their columns, for completion (the first 20000 names; offered at once).
    void setSchema(const QMap<QString, QStringList> &columnsByTable);
    QStringList completionWords() const { return m_words; }

    // Marks an error: `offset` and `length` in UTF-16 units of text(); the message goes beside
    // the line. The cursor moves there.
    void markError(int offset, int length, const QString &message);
    void clearErrors();
    bool hasErrorMark() const { return m_errorLine >= 0; }
    int errorLine() const { return m_errorLine; }       // 0-based
    int errorByteStart() const { return m_errorStart; } // Scintilla position (bytes)

Q_SIGNALS:
    void runStatementRequested();
    void runAllRequested();

protected:
    bool event(QEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;

private:
    void rebuildCompletion();
    void applyErrorColors();

    SqlLexer *m_lexer;           // owned (child)
    SqlCompletion *m_completion; // owned by the lexer (child), no thread
    QString m_dialect;
    QStringList m_words;
    QMap<QString, QStringList> m_schema;
    QsciStyle m_errorStyle; // the error's card (annotation)
    QString m_errorMessage;
    int m_errorLine = -1;
    int m_errorStart = -1;
};

} // namespace Sandbox::Ui
