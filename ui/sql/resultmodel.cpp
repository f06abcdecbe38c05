#include "resultmodel.h"

#include <client/rowfeed.h>
#include <protocol/json.h>

#include <QBrush>
#include <QFile>
#include <QFont>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QPalette>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSet>

#include <algorithm>

Q_LOGGING_CATEGORY(lcResultModel, "sandbox.ui.sql.results")

namespace Sandbox::Ui {

namespace {

constexpr int kMaxCellChars = 2000;

bool isNumber(const QJsonValue &v)
{
    if (v.isDouble())
        return true;
    const QJsonObject o = v.toObject();
    return o.size() == 1
           && (o.contains(QStringLiteral("$int")) || o.contains(QStringLiteral("$float")));
}

QString csvCell(const QJsonValue &v)
{
    if (SqlValue::isNull(v))
        return {};
    QString s = SqlValue::toText(v, false);
    if (s.contains(u',') || s.contains(u'"') || s.contains(u'\n') || s.contains(u'\r'))
        s = u'"' + s.replace(u'"', QStringLiteral("\"\"")) + u'"';
    return s;
}

} // namespace

ResultModel::ResultModel(QObject *parent)
    : QAbstractTableModel(parent)
{}

ResultModel::~ResultModel() = default;

void ResultModel::clear()
{
    beginResetModel();
    ++m_generation;
    if (m_feed) {
        m_feed->disconnect(this);
        m_feed->cancel();
        m_feed->deleteLater();
    }
    m_feed = nullptr;
    m_fields.clear();
    m_pages.clear();
    m_rows = 0;
    m_cache.clear();
    m_lru.clear();
    delete m_spill;
    m_spill = nullptr;
    m_spillBytes = 0;
    const auto exports = std::exchange(m_exports, {});
    endResetModel();
    for (const Export &e : exports)
        if (e.context)
            e.done(Error{ErrorCode::Cancelled, tr("the result was cleared"), {}});
}

void ResultModel::setFeed(RowFeed *feed)
{
    clear();
    m_feed = feed;
    feed->setParent(this);
    const quint64 generation = m_generation;
    connect(feed, &RowFeed::started, this, [this, generation] {
        if (generation != m_generation)
            return;
        beginResetModel();
        m_fields = m_feed->fields();
        endResetModel();
        Q_EMIT started();
    });
    connect(feed, &RowFeed::rowsArrived, this, [this, generation](const SqlRows &rows) {
        if (generation == m_generation) // a page for a result that is gone is dropped
            append(rows);
    });
    connect(feed, &RowFeed::finished, this, [this, generation] {
        if (generation != m_generation)
            return;
        Q_EMIT fetchingChanged(false);
        Q_EMIT finished();
        continueExport();
    });
    connect(feed, &RowFeed::failed, this, [this, generation](const Error &error) {
        if (generation != m_generation)
            return;
        Q_EMIT fetchingChanged(false);
        const auto exports = std::exchange(m_exports, {});
        for (const Export &e : exports)
            if (e.context)
                e.done(error);
        Q_EMIT failed(error);
    });
    Q_EMIT fetchingChanged(true);
    feed->start();
}

void ResultModel::append(const SqlRows &rows)
{
    if (!m_spill) {
        m_spill = new QTemporaryFile(this);
        if (!m_spill->open())
            qCWarning(lcResultModel) << "cannot open a spill file:" << m_spill->errorString();
    }
    // The page's text as it came: nothing to write anew.
    const QByteArray &bytes = rows.toJson();
    Page p;
    p.offset = m_spillBytes;
    p.bytes = bytes.size();
    p.firstRow = m_rows;
    p.rows = int(rows.size());
    m_spill->seek(m_spillBytes);
    if (m_spill->write(bytes) != bytes.size())
        qCWarning(lcResultModel) << "cannot write the spill file:" << m_spill->errorString();
    m_spillBytes += bytes.size();

    beginInsertRows({}, m_rows, m_rows + p.rows - 1);
    m_pages.append(p);
    m_rows += p.rows;
    const int index = int(m_pages.size()) - 1;
    m_cache.insert(index, rows);
    m_lru.append(index);
    while (m_lru.size() > m_maxCachedPages)
        m_cache.remove(m_lru.takeFirst());
    endInsertRows();
    Q_EMIT fetchingChanged(false);
    continueExport();
}

int ResultModel::pageOf(int row) const
{
    const auto it = std::upper_bound(m_pages.cbegin(), m_pages.cend(), row,
                                     [](int r, const Page &p) { return r < p.firstRow; });
    return int(it - m_pages.cbegin()) - 1;
}

const SqlRows *ResultModel::loadPage(int page) const
{
    if (page < 0 || page >= m_pages.size())
        return nullptr;
    auto it = m_cache.find(page);
    if (it == m_cache.end()) {
        const Page &p = m_pages[page];
        m_spill->seek(p.offset);
        Result<SqlRows> decoded = SqlRows::fromJson(m_spill->read(p.bytes));
        if (!decoded) {
            qCWarning(lcResultModel)
                << "cannot read a page back from the spill file:" << decoded.error().message;
            decoded = SqlRows();
        }
        // Room first, then the page: QHash may move its entries when one is removed, so no
        // iterator is kept across a remove() (it pointed at another page now and then).
        while (!m_lru.isEmpty() && m_lru.size() >= m_maxCachedPages)
            m_cache.remove(m_lru.takeFirst());
        it = m_cache.insert(page, *decoded);
        m_lru.append(page);
    } else {
        m_lru.removeOne(page);
        m_lru.append(page);
    }
    return &it.value();
}

QJsonArray ResultModel::rowAt(int row) const
{
    const int page = pageOf(row);
    const SqlRows *rows = loadPage(page);
    if (!rows)
        return {};
    return rows->row(row - m_pages[page].firstRow);
}

QJsonValue ResultModel::valueAt(int row, int column) const
{
    const int page = pageOf(row);
    const SqlRows *rows = loadPage(page);
    if (!rows)
        return QJsonValue(QJsonValue::Undefined);
    return rows->value(row - m_pages[page].firstRow, column);
}

int ResultModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

int ResultModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_fields.size());
}

QVariant ResultModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const QJsonValue v = valueAt(index.row(), index.column());
    const bool null = SqlValue::isNull(v);
    switch (role) {
    case Qt::DisplayRole: {
        if (null)
            return QStringLiteral("NULL");
        QString text = SqlValue::toText(v);
        if (text.size() > kMaxCellChars)
            text = text.left(kMaxCellChars) + QStringLiteral("…");
        return text.replace(u'\n', QStringLiteral("↵"));
    }
    case Qt::EditRole:
    case Qt::ToolTipRole:
        return null ? QVariant() : QVariant(SqlValue::toText(v).left(64 * 1024));
    case Qt::ForegroundRole:
        return null ? QVariant(QBrush(QPalette().color(QPalette::Disabled, QPalette::Text)))
                    : QVariant();
    case Qt::FontRole:
        if (null) {
            QFont f;
            f.setItalic(true);
            return f;
        }
        return {};
    case Qt::TextAlignmentRole:
        return isNumber(v) ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                           : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    case IsNullRole:
        return null;
    case JsonRole:
        return QVariant::fromValue(v);
    default:
        return {};
    }
}

QVariant ResultModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Vertical)
        return role == Qt::DisplayRole ? QVariant(section + 1) : QVariant();
    if (section < 0 || section >= m_fields.size())
        return {};
    if (role == Qt::DisplayRole)
        return m_fields[section].name;
    if (role == Qt::ToolTipRole)
        return QStringLiteral("%1 %2").arg(m_fields[section].name, m_fields[section].type);
    return {};
}

bool ResultModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && m_feed && m_feed->canFetchMore();
}

void ResultModel::fetchMore(const QModelIndex &parent)
{
    if (parent.isValid() || !m_feed || m_feed->isFetching() || !m_feed->canFetchMore())
        return;
    Q_EMIT fetchingChanged(true);
    m_feed->fetchMore();
}

bool ResultModel::isComplete() const
{
    return !m_feed || m_feed->isFinished();
}

bool ResultModel::isFetching() const
{
    return m_feed && m_feed->isFetching();
}

QString ResultModel::copyText(const QModelIndexList &indexes, bool withHeader) const
{
    QMap<int, QMap<int, QString>> cells;
    int minColumn = INT_MAX, maxColumn = -1;
    for (const QModelIndex &i : indexes) {
        const QJsonValue v = valueAt(i.row(), i.column());
        cells[i.row()][i.column()] = SqlValue::isNull(v) ? QString() : SqlValue::toText(v);
        minColumn = qMin(minColumn, i.column());
        maxColumn = qMax(maxColumn, i.column());
    }
    QStringList lines;
    if (withHeader && maxColumn >= 0) {
        QStringList names;
        for (int c = minColumn; c <= maxColumn; ++c)
            names.append(m_fields.value(c).name);
        lines.append(names.join(u'\t'));
    }
    for (auto row = cells.cbegin(); row != cells.cend(); ++row) {
        QStringList values;
        for (int c = minColumn; c <= maxColumn; ++c)
            values.append(row.value().value(c).replace(u'\t', u' ').replace(u'\n', u' '));
        lines.append(values.join(u'\t'));
    }
    return lines.join(u'\n');
}

namespace {

QString csvField(const QString &s)
{
    if (!s.contains(u',') && !s.contains(u'"') && !s.contains(u'\n') && !s.contains(u'\r'))
        return s;
    QString q = s;
    q.replace(QStringLiteral("\""), QStringLiteral("\"\""));
    return u'"' + q + u'"';
}

QString sqlIdentifier(const QString &name)
{
    static const QRegularExpression plain(QStringLiteral("^[a-z_][a-z0-9_]*$"));
    if (plain.match(name).hasMatch())
        return name;
    QString q = name;
    q.replace(QStringLiteral("\""), QStringLiteral("\"\""));
    return u'"' + q + u'"';
}

QString sqlLiteral(const QJsonValue &v)
{
    if (SqlValue::isNull(v))
        return QStringLiteral("NULL");
    if (v.isBool())
        return v.toBool() ? QStringLiteral("TRUE") : QStringLiteral("FALSE");
    if (v.isDouble())
        return SqlValue::toText(v);
    if (v.isObject() && v.toObject().contains(QStringLiteral("$int")))
        return v.toObject().value(QStringLiteral("$int")).toString();
    QString text = SqlValue::toText(v, true);
    text.replace(QStringLiteral("'"), QStringLiteral("''"));
    return u'\'' + text + u'\'';
}

// A JSON value for a copied row: the engine's plain JSON as is; $int and $float as numbers when
// exact, $bytes kept as their object.
QJsonValue plainJson(const QJsonValue &v)
{
    if (v.isObject() && v.toObject().contains(QStringLiteral("$int"))) {
        bool ok = false;
        const qint64 n = v.toObject().value(QStringLiteral("$int")).toString().toLongLong(&ok);
        return ok && qAbs(n) < (qint64(1) << 53) ? QJsonValue(double(n)) : v;
    }
    return v;
}

} // namespace

QString ResultModel::copyAs(const QModelIndexList &indexes, CopyFormat format,
                            const QString &table) const
{
    QSet<int> rowSet;
    int minColumn = INT_MAX, maxColumn = -1;
    for (const QModelIndex &i : indexes) {
        rowSet.insert(i.row());
        minColumn = qMin(minColumn, i.column());
        maxColumn = qMax(maxColumn, i.column());
    }
    if (maxColumn < 0)
        return {};
    QList<int> rows(rowSet.begin(), rowSet.end());
    std::sort(rows.begin(), rows.end());
    QStringList names;
    for (int c = minColumn; c <= maxColumn; ++c)
        names.append(m_fields.value(c).name);
    QStringList out;
    switch (format) {
    case CopyFormat::Csv: {
        QStringList header;
        for (const QString &n : std::as_const(names))
            header.append(csvField(n));
        out.append(header.join(u','));
        for (int r : std::as_const(rows)) {
            const QJsonArray row = rowAt(r);
            QStringList values;
            for (int c = minColumn; c <= maxColumn; ++c) {
                const QJsonValue v = row.at(c);
                values.append(SqlValue::isNull(v) ? QString() : csvField(SqlValue::toText(v)));
            }
            out.append(values.join(u','));
        }
        return out.join(QStringLiteral("\r\n")) + QStringLiteral("\r\n");
    }
    case CopyFormat::Json: {
        QJsonArray array;
        for (int r : std::as_const(rows)) {
            const QJsonArray row = rowAt(r);
            QJsonObject o;
            for (int c = minColumn; c <= maxColumn; ++c)
                o.insert(names.at(c - minColumn), plainJson(row.at(c)));
            array.append(o);
        }
        return QString::fromUtf8(QJsonDocument(array).toJson(QJsonDocument::Indented));
    }
    case CopyFormat::Insert: {
        QStringList columns;
        for (const QString &n : std::as_const(names))
            columns.append(sqlIdentifier(n));
        const QString head = QStringLiteral("INSERT INTO %1 (%2) VALUES (")
                                 .arg(sqlIdentifier(table), columns.join(QStringLiteral(", ")));
        for (int r : std::as_const(rows)) {
            const QJsonArray row = rowAt(r);
            QStringList values;
            for (int c = minColumn; c <= maxColumn; ++c)
                values.append(sqlLiteral(row.at(c)));
            out.append(head + values.join(QStringLiteral(", ")) + QStringLiteral(");"));
        }
        return out.join(u'\n') + u'\n';
    }
    }
    return {};
}

QString ResultModel::fullText(const QModelIndex &index, int maxBytes) const
{
    const QJsonValue v = valueAt(index.row(), index.column());
    if (SqlValue::isNull(v))
        return QStringLiteral("NULL");
    if (v.isObject() && v.toObject().contains(QStringLiteral("$bytes"))) {
        const QByteArray data = QByteArray::fromBase64(
            v.toObject().value(QStringLiteral("$bytes")).toString().toLatin1());
        QStringList lines;
        const int n = int(qMin<qsizetype>(data.size(), maxBytes));
        for (int off = 0; off < n; off += 16) {
            const QByteArray chunk = data.mid(off, qMin(16, n - off));
            QString ascii;
            for (char ch : chunk)
                ascii.append(ch >= 0x20 && ch < 0x7f ? QChar::fromLatin1(ch) : u'.');
            lines.append(QStringLiteral("%1  %2  %3")
                             .arg(off, 8, 16, QLatin1Char('0'))
                             .arg(QString::fromLatin1(chunk.toHex(' ')), -47)
                             .arg(ascii));
        }
        if (data.size() > n)
            lines.append(tr("… %1 more bytes").arg(data.size() - n));
        return lines.join(u'\n');
    }
    if (v.isArray() || v.isObject())
        return QString::fromUtf8(v.isArray() ? QJsonDocument(v.toArray()).toJson()
                                             : QJsonDocument(v.toObject()).toJson());
    const QString text = SqlValue::toText(v);
    // A json column's value is its JSON text: shown indented.
    if (text.startsWith(u'{') || text.startsWith(u'[')) {
        const Json::Parsed parsed = Json::parse(text.toUtf8());
        if (!parsed.error && parsed.value.isObject())
            return QString::fromUtf8(QJsonDocument(parsed.value.toObject()).toJson());
        if (!parsed.error && parsed.value.isArray())
            return QString::fromUtf8(QJsonDocument(parsed.value.toArray()).toJson());
    }
    return text;
}

void ResultModel::exportTo(const QString &path, Format format, QObject *context,
                           std::function<void(Result<qint64>)> done)
{
    m_exports.append({path, format, context, std::move(done)});
    continueExport();
}

void ResultModel::continueExport()
{
    if (m_exports.isEmpty())
        return;
    if (m_feed && !m_feed->isFinished()) {
        // The rest of the result first: page after page into the spill, not the query again.
        if (!m_feed->isFetching() && m_feed->canFetchMore()) {
            Q_EMIT fetchingChanged(true);
            m_feed->fetchMore();
        }
        return;
    }
    const auto exports = std::exchange(m_exports, {});
    for (const Export &e : exports) {
        QSaveFile out(e.path);
        Result<qint64> result = qint64(0);
        if (!out.open(QIODevice::WriteOnly)) {
            result = Error{ErrorCode::FileError,
                           tr("cannot write %1: %2").arg(e.path, out.errorString()),
                           {}};
        } else {
            QStringList names;
            for (const SqlField &f : m_fields)
                names.append(f.name);
            if (e.format == Format::Csv) {
                QStringList header;
                for (const QString &n : names)
                    header.append(csvCell(n));
                out.write(header.join(u',').toUtf8() + "\r\n");
            } else {
                out.write("[");
            }
            qint64 written = 0;
            for (int page = 0; page < m_pages.size(); ++page) {
                m_spill->seek(m_pages[page].offset);
                const QJsonArray rows
                    = QJsonDocument::fromJson(m_spill->read(m_pages[page].bytes)).array();
                QByteArray chunk;
                for (const QJsonValue &row : rows) {
                    const QJsonArray r = row.toArray();
                    if (e.format == Format::Csv) {
                        QStringList cells;
                        for (const QJsonValue &v : r)
                            cells.append(csvCell(v));
                        chunk += cells.join(u',').toUtf8() + "\r\n";
                    } else {
                        QJsonObject o;
                        for (int c = 0; c < r.size() && c < names.size(); ++c)
                            o.insert(names[c], r[c]);
                        chunk += (written ? ",\n" : "\n")
                                 + QJsonDocument(o).toJson(QJsonDocument::Compact);
                    }
                    ++written;
                }
                out.write(chunk);
            }
            if (e.format == Format::Json)
                out.write(written ? "\n]\n" : "]\n");
            if (!out.commit())
                result = Error{ErrorCode::FileError,
                               tr("cannot write %1: %2").arg(e.path, out.errorString()),
                               {}};
            else
                result = written;
        }
        if (e.context)
            e.done(result);
    }
}

} // namespace Sandbox::Ui
