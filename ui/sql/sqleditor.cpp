#include "sqleditor.h"

#include "../common/uistyle.h"

#include <protocol/sandboxenums.h>

#include <Qsci/qsciabstractapis.h>
#include <Qsci/qscilexersql.h>

#include <QHash>
#include <QKeyEvent>

#include <algorithm>

namespace Sandbox::Ui {

namespace {

constexpr int kErrorIndicator = 8;
constexpr int kErrorMarker = 1;
// Completion is built on the GUI thread as the schema arrives: bounded so that a huge schema
// costs milliseconds, and a popup never lists more than a screenful of screenfuls.
constexpr qsizetype kMaxCompletionEntries = 20000;
constexpr qsizetype kMaxOffered = 500;

const char kCommon[]
    = "select from where group by having order limit offset insert into values update set delete "
      "create table "
      "view index unique primary key foreign references drop alter add column rename to as on join "
      "inner left "
      "right full outer cross natural using and or not null is in between like exists case when "
      "then else end "
      "distinct all union intersect except with recursive begin commit rollback transaction "
      "default check "
      "constraint cast true false asc desc nulls first last explain analyze over partition window "
      "filter returning "
      "if replace temporary temp integer int bigint smallint text varchar char boolean real double "
      "precision "
      "numeric decimal date time timestamp interval count sum avg min max coalesce nullif";
const char kPostgres[] = " serial bigserial bytea jsonb json uuid array schema grant revoke role "
                         "vacuum sequence returning ilike "
                         "similar lateral materialized refresh trigger function procedure language "
                         "plpgsql do copy timestamptz "
                         "tablespace extension conflict nothing";
const char kSqlite[] = " autoincrement pragma attach detach glob regexp vacuum without rowid "
                       "strict blob reindex conflict abort "
                       "fail ignore indexed virtual trigger instead of";
const char kDuckdb[]
    = " pivot unpivot qualify summarize describe struct map list blob hugeint ubigint uuid json "
      "copy parquet "
      "read_csv read_parquet read_json install load macro sequence positional asof";

} // namespace

// QsciLexerSQL with the dialect's keywords (CodeEditor gives every style the fixed-pitch font).
class SqlLexer final : public QsciLexerSQL
{
public:
    explicit SqlLexer(QObject *parent)
        : QsciLexerSQL(parent)
    {}
    QByteArray words;
    const char *keywords(int set) const override
    {
        return set == 1 ? words.constData() : QsciLexerSQL::keywords(set);
    }
    // "people." asks for people's columns.
    QStringList autoCompletionWordSeparators() const override { return {QStringLiteral(".")}; }
    // "sel" completes to SELECT: QsciScintilla sets the popup's case from this on every
    // setLexer(), so a dialect set after construction would otherwise make it case-sensitive.
    bool caseSensitive() const override { return false; }
};

// What the editor offers as the user types: keywords, tables and columns starting with the word
// under the cursor (any case), or after "table." that table's columns. Everything is computed on
// the GUI thread from bounded lists. QsciAPIs is not used: it prepares its lists in a QThread
// that its destructor terminates after 500 ms without waiting, which aborts the app ("QThread:
// Destroyed while thread is still running") when an editor closes while a loaded machine has not
// finished preparing; and it drops a prepare() asked for while one runs, so a schema that
// arrived right after the dialect was never offered.
class SqlCompletion final : public QsciAbstractAPIs
{
public:
    explicit SqlCompletion(QsciLexer *lexer)
        : QsciAbstractAPIs(lexer)
    {}

    // `words`: everything offered for a bare word; `columns`: by lower-case table name.
    void set(QStringList words, QHash<QString, QStringList> columns)
    {
        std::sort(words.begin(), words.end(), lessNoCase);
        m_words = std::move(words);
        for (QStringList &list : columns)
            std::sort(list.begin(), list.end(), lessNoCase);
        m_columns = std::move(columns);
    }

    void updateAutoCompletionList(const QStringList &context, QStringList &list) override
    {
        if (context.isEmpty())
            return;
        const QString &prefix = context.last();
        if (context.size() >= 2) {
            const auto it = m_columns.constFind(context.at(context.size() - 2).toLower());
            if (it != m_columns.cend())
                addStartingWith(*it, prefix, list);
            return;
        }
        if (!prefix.isEmpty())
            addStartingWith(m_words, prefix, list);
    }

    QStringList callTips(const QStringList &, int, QsciScintilla::CallTipsStyle,
                         QList<int> &) override
    {
        return {};
    }

private:
    static bool lessNoCase(const QString &a, const QString &b)
    {
        return QString::compare(a, b, Qt::CaseInsensitive) < 0;
    }

    static void addStartingWith(const QStringList &sorted, const QString &prefix, QStringList &out)
    {
        auto it = std::lower_bound(sorted.cbegin(), sorted.cend(), prefix, lessNoCase);
        for (qsizetype n = 0; it != sorted.cend() && n < kMaxOffered; ++it, ++n) {
            if (!it->startsWith(prefix, Qt::CaseInsensitive))
                break;
            out.append(*it);
        }
    }

    QStringList m_words;
    QHash<QString, QStringList> m_columns;
};

SqlEditor::SqlEditor(QWidget *parent)
    : CodeEditor(parent)
    , m_lexer(new SqlLexer(this))
    , m_completion(new SqlCompletion(m_lexer))
{
    setDialect(QStringLiteral("postgres"));
    setMarginWidth(1, 14);
    setMarginSensitivity(1, false);
    markerDefine(QsciScintilla::Circle, kErrorMarker);
    indicatorDefine(QsciScintilla::SquiggleIndicator, kErrorIndicator);
    setAnnotationDisplay(QsciScintilla::AnnotationBoxed);
    applyErrorColors();
    connect(this, &CodeEditor::colorsChanged, this, &SqlEditor::applyErrorColors);
    setAutoCompletionSource(QsciScintilla::AcsAPIs);
    setAutoCompletionThreshold(2);
    setAutoCompletionCaseSensitivity(false);
    setAutoCompletionReplaceWord(true);
    // The popup sorts its list itself: keywords are upper case, names as the schema spells them.
    SendScintilla(SCI_AUTOCSETORDER, SC_ORDER_PERFORMSORT);
    connect(this, &QsciScintilla::textChanged, this, [this] {
        if (hasErrorMark())
            clearErrors();
    });
}

SqlEditor::~SqlEditor() = default;

void SqlEditor::applyErrorColors()
{
    // From the palette: a red that reads on it, on a card tinted with it.
    const QPalette pal = palette();
    const QColor red = Style::color(Style::Tone::Error, pal);
    setMarkerBackgroundColor(red, kErrorMarker);
    setMarkerForegroundColor(red, kErrorMarker);
    setIndicatorForegroundColor(red, kErrorIndicator);
    m_errorStyle = QsciStyle(m_errorStyle.style(), QStringLiteral("SQL error"),
                             pal.color(QPalette::Text), Style::background(Style::Tone::Error, pal),
                             Style::monospaceFont());
    if (m_errorLine >= 0)
        annotate(m_errorLine, m_errorMessage, m_errorStyle);
}

void SqlEditor::setDialect(const QString &engine)
{
    m_dialect = engine;
    QByteArray words = kCommon;
    const SandboxType server = fromWire<SandboxType>(engine);
    words += server == SandboxType::Sqlite   ? kSqlite
             : server == SandboxType::DuckDb ? kDuckdb
                                             : kPostgres;
    m_lexer->words = words;
    setLexer(m_lexer); // re-reads the keyword lists
    rebuildCompletion();
}

void SqlEditor::setSchema(const QMap<QString, QStringList> &columnsByTable)
{
    m_schema = columnsByTable;
    rebuildCompletion();
}

void SqlEditor::rebuildCompletion()
{
    QStringList words = QString::fromLatin1(m_lexer->words).split(u' ', Qt::SkipEmptyParts);
    for (QString &w : words)
        w = w.toUpper();
    QStringList bare = words; // keywords, tables, columns
    QHash<QString, QStringList> columns;
    qsizetype budget = kMaxCompletionEntries;
    for (auto it = m_schema.cbegin(); it != m_schema.cend() && budget > 0; ++it, --budget) {
        words.append(it.key());
        bare.append(it.key());
        QStringList &own = columns[it.key().toLower()];
        for (const QString &c : it.value()) {
            if (--budget <= 0)
                break;
            own.append(c);
            bare.append(c);
            words.append(it.key() + u'.' + c);
        }
    }
    words.removeDuplicates();
    words.sort(Qt::CaseInsensitive);
    m_words = words;
    bare.removeDuplicates();
    m_completion->set(std::move(bare), std::move(columns));
}

namespace {
bool isRunKey(const QKeyEvent *event)
{
    return (event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter)
           && (event->modifiers() & Qt::ControlModifier);
}
} // namespace

bool SqlEditor::event(QEvent *event)
{
    // Ctrl+Enter and Ctrl+Shift+Enter are the editor's own, whatever the window binds them to.
    if (event->type() == QEvent::ShortcutOverride && isRunKey(static_cast<QKeyEvent *>(event))) {
        event->accept();
        return true;
    }
    return CodeEditor::event(event);
}

void SqlEditor::keyPressEvent(QKeyEvent *event)
{
    if (isRunKey(event)) {
        if (event->modifiers() & Qt::ShiftModifier)
            Q_EMIT runAllRequested();
        else
            Q_EMIT runStatementRequested();
        event->accept();
        return;
    }
    CodeEditor::keyPressEvent(event);
}

void SqlEditor::markError(int offset, int length, const QString &message)
{
    clearErrors();
    // Scintilla counts bytes of UTF-8.
    const int start = positionFromOffset(offset);
    const int bytes = qMax(1, positionFromOffset(offset + qMax(1, length)) - start);
    SendScintilla(SCI_SETINDICATORCURRENT, kErrorIndicator);
    SendScintilla(SCI_INDICATORFILLRANGE, start, bytes);
    m_errorStart = start;
    m_errorLine = int(SendScintilla(SCI_LINEFROMPOSITION, start));
    markerAdd(m_errorLine, kErrorMarker);
    m_errorMessage = message;
    annotate(m_errorLine, message, m_errorStyle);
    SendScintilla(SCI_GOTOPOS, start);
    ensureLineVisible(m_errorLine);
}

void SqlEditor::clearErrors()
{
    if (m_errorLine < 0)
        return;
    SendScintilla(SCI_SETINDICATORCURRENT, kErrorIndicator);
    SendScintilla(SCI_INDICATORCLEARRANGE, 0, SendScintilla(SCI_GETLENGTH));
    markerDeleteAll(kErrorMarker);
    clearAnnotations();
    m_errorLine = -1;
    m_errorStart = -1;
}

} // namespace Sandbox::Ui
