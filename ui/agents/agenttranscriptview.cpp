#include "agenttranscriptview.h"

#include "agenttranscriptmodel.h"
#include "problemcard.h"
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
                addCards(from.row(), to.row()); // a text that turned out to be an error
                m_delegate->invalidate(from.row(), to.row());
                // Heights may change (a tool call opened, its result arrived): lay the rows out again.
                scheduleDelayedItemsLayout();
            });
    connect(model, &QAbstractItemModel::modelReset, this, [this] { m_delegate->invalidate(); });
    connect(model, &QAbstractItemModel::rowsInserted, this,
            [this](const QModelIndex &, int first, int last) { onRowsInserted(first, last); });
    addCards(0, model->rowCount() - 1);
}

ProblemCard *AgentTranscriptView::cardAt(int row) const
{
    return m_model ? qobject_cast<ProblemCard *>(indexWidget(m_model->index(row))) : nullptr;
}

void AgentTranscriptView::addCards(int first, int last)
{
    for (int row = first; row <= last; ++row) {
        const QModelIndex index = m_model->index(row);
        if (index.data(AgentTranscriptModel::ProblemRole).toInt() < 0)
            continue;
        auto *card = cardAt(row);
        if (!card) {
            card = new ProblemCard(viewport());
            const QPersistentModelIndex where(index);
            connect(card, &ProblemCard::fixClicked, this, [this, where] {
                if (where.isValid())
                    Q_EMIT fixRequested(where.data(AgentTranscriptModel::ProblemRole).toInt(),
                                        where.data(AgentTranscriptModel::HostsRole).toStringList());
            });
            connect(card, &ProblemCard::heightChanged, this, [this, where] {
                if (!where.isValid())
                    return;
                m_delegate->invalidate(where.row(), where.row());
                scheduleDelayedItemsLayout();
            });
            setIndexWidget(index, card);
        }
        card->setProblem(index.data(AgentTranscriptModel::TitleRole).toString(),
                         index.data(AgentTranscriptModel::BodyRole).toString(),
                         index.data(AgentTranscriptModel::RawTextRole).toString(),
                         index.data(AgentTranscriptModel::FixRole).toString());
    }
}

void AgentTranscriptView::onRowsInserted(int first, int last)
{
    addCards(first, last);
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
