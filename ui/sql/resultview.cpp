#include "resultview.h"

#include "../common/uistyle.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

ResultView::ResultView(QWidget *parent)
    : QWidget(parent)
    , m_model(new ResultModel(this))
    , m_stack(new QStackedWidget(this))
    , m_table(new QTableView(m_stack))
    , m_text(new QPlainTextEdit(m_stack))
    , m_status(new QLabel(this))
    , m_exportButtons(new QWidget(this))
{
    m_table->setModel(m_model);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setSelectionBehavior(QAbstractItemView::SelectItems);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->horizontalHeader()->setDefaultSectionSize(140);
    m_text->setReadOnly(true);
    m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_stack->addWidget(m_table);
    m_stack->addWidget(m_text);

    auto *copy = new QAction(tr("Copy"), m_table);
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetShortcut);
    connect(copy, &QAction::triggered, this, [this] { copySelection(false); });
    auto *copyWithHeader = new QAction(tr("Copy with Header"), m_table);
    copyWithHeader->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copyWithHeader->setShortcutContext(Qt::WidgetShortcut);
    connect(copyWithHeader, &QAction::triggered, this, [this] { copySelection(true); });
    const auto copyAs = [this](const QString &text, ResultModel::CopyFormat format) {
        auto *a = new QAction(text, m_table);
        connect(a, &QAction::triggered, this, [this, format] {
            QApplication::clipboard()->setText(
                m_model->copyAs(m_table->selectionModel()->selectedIndexes(), format, m_tableName));
        });
        return a;
    };
    auto *separator = new QAction(m_table);
    separator->setSeparator(true);
    auto *viewCell = new QAction(tr("View Cell…"), m_table);
    viewCell->setShortcut(QKeySequence(Qt::Key_F3));
    viewCell->setShortcutContext(Qt::WidgetShortcut);
    connect(viewCell, &QAction::triggered, this, [this] { viewCurrentCell(); });
    connect(m_table, &QTableView::doubleClicked, this, [this] { viewCurrentCell(); });
    auto *separator2 = new QAction(m_table);
    separator2->setSeparator(true);
    auto *fetchAll = new QAction(tr("Fetch All Rows"), m_table);
    connect(fetchAll, &QAction::triggered, this, &ResultView::fetchAll);
    m_table->addActions({copy, copyWithHeader, separator,
                         copyAs(tr("Copy as CSV"), ResultModel::CopyFormat::Csv),
                         copyAs(tr("Copy as JSON"), ResultModel::CopyFormat::Json),
                         copyAs(tr("Copy as SQL INSERT"), ResultModel::CopyFormat::Insert),
                         separator2, viewCell, fetchAll});
    m_table->setContextMenuPolicy(Qt::ActionsContextMenu);

    auto *csv = new QToolButton(m_exportButtons);
    csv->setText(tr("Export CSV…"));
    connect(csv, &QToolButton::clicked, this, [this] { askExport(ResultModel::Format::Csv); });
    auto *json = new QToolButton(m_exportButtons);
    json->setText(tr("Export JSON…"));
    connect(json, &QToolButton::clicked, this, [this] { askExport(ResultModel::Format::Json); });
    m_countButton = new QToolButton(m_exportButtons);
    m_countButton->setObjectName(QStringLiteral("count"));
    m_countButton->setText(tr("Count"));
    m_countButton->setToolTip(tr("Count the rows of the whole result (runs the query again as "
                                 "count(*))"));
    m_countButton->setVisible(false);
    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("filter"));
    m_filter->setPlaceholderText(tr("Filter on the server: WHERE …"));
    m_filter->setToolTip(tr("A condition on the result's columns (e.g. n > 10 AND label LIKE "
                            "'a%'); Enter runs the query again on the server with it, so that "
                            "it covers every row, not only those fetched"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setVisible(false);
    connect(m_filter, &QLineEdit::returnPressed, this, [this] {
        m_filterText = m_filter->text().trimmed();
        Q_EMIT requeryRequested();
    });
    // Cleared with its button: the whole result again.
    connect(m_filter, &QLineEdit::textChanged, this, [this](const QString &text) {
        if (text.isEmpty() && !m_filterText.isEmpty()) {
            m_filterText.clear();
            Q_EMIT requeryRequested();
        }
    });
    connect(m_countButton, &QToolButton::clicked, this, [this] {
        m_countButton->setEnabled(false);
        Q_EMIT countRequested();
    });
    auto *buttons = new QHBoxLayout(m_exportButtons);
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(m_countButton);
    buttons->addWidget(csv);
    buttons->addWidget(json);

    auto *bottom = new QHBoxLayout;
    bottom->addWidget(m_status, 1);
    bottom->addWidget(m_exportButtons);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_filter); // above the rows it filters, as wide as they are
    layout->addWidget(m_stack, 1);
    layout->addLayout(bottom);
    m_exportButtons->setVisible(false);
}

void ResultView::setRequeryable(bool on)
{
    m_countButton->setVisible(on);
    m_requeryable = on;
    m_filter->setVisible(on && m_stack->currentWidget() == m_table);
    QHeaderView *header = m_table->horizontalHeader();
    header->setSectionsClickable(on);
    if (!on)
        return;
    header->setToolTip(tr("Click a column to sort the whole result by it: the query runs again "
                          "on the server"));
    connect(header, &QHeaderView::sectionClicked, this, [this, header](int column) {
        // The server sorts (the query runs again, ordered): the whole result, not the rows here.
        m_sortOrder = column == m_sortColumn && m_sortOrder == Qt::AscendingOrder
                          ? Qt::DescendingOrder
                          : Qt::AscendingOrder;
        m_sortColumn = column;
        header->setSortIndicatorShown(true);
        header->setSortIndicator(column, m_sortOrder);
        Q_EMIT requeryRequested();
    });
}

void ResultView::setTotal(const QString &text)
{
    m_countButton->setEnabled(true);
    m_countButton->setText(text);
}

void ResultView::viewCurrentCell()
{
    const QModelIndex index = m_table->currentIndex();
    if (!index.isValid())
        return;
    QDialog dialog(this);
    dialog.setObjectName(QStringLiteral("cellViewer"));
    dialog.setWindowTitle(
        tr("%1, row %2").arg(m_model->fields().value(index.column()).name).arg(index.row() + 1));
    auto *text = new QPlainTextEdit(&dialog);
    text->setReadOnly(true);
    text->setFont(Style::monospaceFont());
    text->setPlainText(m_model->fullText(index));
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    auto *copyButton = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    connect(copyButton, &QPushButton::clicked, text,
            [text] { QApplication::clipboard()->setText(text->toPlainText()); });
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto *layout = new QVBoxLayout(&dialog);
    layout->addWidget(text, 1);
    layout->addWidget(buttons);
    dialog.resize(640, 420);
    Q_EMIT cellViewerOpened(&dialog);
    dialog.exec();
}

void ResultView::fetchAll()
{
    // Page after page into the model's spill file (memory stays bounded), up to MaxFetchAllRows.
    if (!m_model->canFetchMore({}) || m_model->rowCount() >= MaxFetchAllRows)
        return;
    if (!m_fetchingAll) {
        m_fetchingAll = true;
        connect(m_model, &ResultModel::fetchingChanged, this, [this](bool fetching) {
            if (!fetching && m_fetchingAll)
                fetchAll();
        });
    }
    if (!m_model->isFetching())
        m_model->fetchMore({});
}

void ResultView::showRows()
{
    m_stack->setCurrentWidget(m_table);
    m_exportButtons->setVisible(true);
    m_filter->setVisible(m_requeryable);
}

void ResultView::showText(const QString &text, bool isError)
{
    m_text->setPlainText(text);
    Style::setTextTone(m_text, isError ? Style::Tone::Error : Style::Tone::Normal);
    m_stack->setCurrentWidget(m_text);
    m_exportButtons->setVisible(false);
    m_filter->setVisible(false);
}

void ResultView::showWidget(QWidget *widget)
{
    m_stack->addWidget(widget);
    m_stack->setCurrentWidget(widget);
    m_exportButtons->setVisible(false);
    m_filter->setVisible(false);
}

QWidget *ResultView::shownWidget() const
{
    return m_stack->currentWidget();
}

bool ResultView::isTextShown() const
{
    return m_stack->currentWidget() == m_text;
}

QString ResultView::text() const
{
    return m_text->toPlainText();
}

void ResultView::setStatus(const QString &status)
{
    m_statusText = status;
    m_status->setText(m_requeryNote.isEmpty() ? status
                                              : status + QStringLiteral(" · ") + m_requeryNote);
}

void ResultView::setRequeryNote(const QString &note)
{
    m_requeryNote = note;
    setStatus(m_statusText);
}

QString ResultView::status() const
{
    return m_status->text();
}

void ResultView::copySelection(bool withHeader)
{
    const QModelIndexList selected = m_table->selectionModel()->selectedIndexes();
    if (selected.isEmpty())
        return;
    QApplication::clipboard()->setText(m_model->copyText(selected, withHeader));
}

void ResultView::askExport(ResultModel::Format format)
{
    const bool csv = format == ResultModel::Format::Csv;
    const QString path
        = QFileDialog::getSaveFileName(this, csv ? tr("Export as CSV") : tr("Export as JSON"),
                                       QString(), csv ? tr("CSV (*.csv)") : tr("JSON (*.json)"));
    if (!path.isEmpty())
        exportTo(path, format);
}

void ResultView::exportTo(const QString &path, ResultModel::Format format)
{
    setStatus(tr("Exporting… (fetching the rest of the result)"));
    m_model->exportTo(path, format, this, [this, path](Result<qint64> r) {
        if (!r) {
            setStatus(tr("Export failed: %1").arg(r.error().message));
            Q_EMIT exportFailed(r.error().message);
            return;
        }
        setStatus(tr("%1 rows exported to %2").arg(*r).arg(path));
        Q_EMIT exported(path, *r);
    });
}

} // namespace Sandbox::Ui
