#include "agenttranscriptview.h"

#include "agenttranscriptmodel.h"
#include "transcriptdelegate.h"

#include <QMouseEvent>
#include <QScrollBar>

namespace Sandbox::Ui {

AgentTranscriptView::AgentTranscriptView(QWidget *parent)
    : QListView(parent)
    , m_delegate(new TranscriptDelegate(this))
{
    setItemDelegate(m_delegate);
    setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setUniformItemSizes(false);
    setLayoutMode(QListView::Batched);
    setBatchSize(50);
    setResizeMode(QListView::Adjust);
    setWordWrap(true);
    setSelectionMode(QAbstractItemView::SingleSelection);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    verticalScrollBar()->setSingleStep(24);
    connect(verticalScrollBar(), &QScrollBar::sliderMoved, this,
            [this](int value) { m_follow = value >= verticalScrollBar()->maximum() - 4; });
    connect(verticalScrollBar(), &QScrollBar::actionTriggered, this, [this] {
        QMetaObject::invokeMethod(
            this,
            [this] {
                m_follow = verticalScrollBar()->value() >= verticalScrollBar()->maximum() - 4;
            },
            Qt::QueuedConnection);
    });
    // Rows grow as they are laid out (in batches) or opened: stay at the bottom when following.
    connect(verticalScrollBar(), &QScrollBar::rangeChanged, this, [this](int, int max) {
        if (m_follow)
            verticalScrollBar()->setValue(max);
    });
    connect(this, &QListView::clicked, this, [this](const QModelIndex &index) {
        if (m_model && index.data(AgentTranscriptModel::CollapsibleRole).toBool())
            m_model->toggleExpanded(index.row());
    });
}

void AgentTranscriptView::setTranscript(AgentTranscriptModel *model)
{
    if (m_model)
        m_model->disconnect(this);
    m_model = model;
    setModel(model);
    m_delegate->invalidate();
    if (!model)
        return;
    connect(model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex &from, const QModelIndex &to) {
                m_delegate->invalidate(from.row(), to.row());
                // Heights may change (a tool call opened, its result arrived): lay the rows out again.
                scheduleDelayedItemsLayout();
            });
    connect(model, &QAbstractItemModel::modelReset, this, [this] { m_delegate->invalidate(); });
    connect(model, &QAbstractItemModel::rowsInserted, this, &AgentTranscriptView::onRowsInserted);
}

void AgentTranscriptView::onRowsInserted()
{
    if (m_follow)
        QMetaObject::invokeMethod(
            this, [this] { scrollToBottom(); }, Qt::QueuedConnection);
}

void AgentTranscriptView::resizeEvent(QResizeEvent *event)
{
    m_delegate->invalidate();
    QListView::resizeEvent(event);
}

} // namespace Sandbox::Ui
