#include "resultview.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
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
    m_table->addActions({copy, copyWithHeader});
    m_table->setContextMenuPolicy(Qt::ActionsContextMenu);

    auto *csv = new QToolButton(m_exportButtons);
    csv->setText(tr("Export CSV…"));
    connect(csv, &QToolButton::clicked, this, [this] { askExport(ResultModel::Format::Csv); });
    auto *json = new QToolButton(m_exportButtons);
    json->setText(tr("Export JSON…"));
    connect(json, &QToolButton::clicked, this, [this] { askExport(ResultModel::Format::Json); });
    auto *buttons = new QHBoxLayout(m_exportButtons);
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->addWidget(csv);
    buttons->addWidget(json);

    auto *bottom = new QHBoxLayout;
    bottom->addWidget(m_status, 1);
    bottom->addWidget(m_exportButtons);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_stack, 1);
    layout->addLayout(bottom);
    m_exportButtons->setVisible(false);
}

void ResultView::showRows()
{
    m_stack->setCurrentWidget(m_table);
    m_exportButtons->setVisible(true);
}

void ResultView::showText(const QString &text, bool isError)
{
    m_text->setPlainText(text);
    QPalette p = m_text->palette();
    p.setColor(QPalette::Text, isError ? QColor(0xd3, 0x2f, 0x2f) : palette().color(QPalette::Text));
    m_text->setPalette(p);
    m_stack->setCurrentWidget(m_text);
    m_exportButtons->setVisible(false);
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
    m_status->setText(status);
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
