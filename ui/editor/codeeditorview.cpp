#include "codeeditorview.h"

#include "codeeditor.h"
#include "findbar.h"

#include <QAction>
#include <QVBoxLayout>

namespace Sandbox::Ui {

CodeEditorView::CodeEditorView(CodeEditor *editor, QWidget *parent)
    : QWidget(parent)
    , m_editor(editor)
    , m_findBar(new FindBar(editor, this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(m_editor, 1);
    layout->addWidget(m_findBar);
    m_findBar->hide();
    setFocusProxy(m_editor);

    const auto addAction = [this](const QString &text, const QKeySequence &key, auto slot) {
        auto *a = new QAction(text, this);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        connect(a, &QAction::triggered, this, slot);
        QWidget::addAction(a);
    };
    addAction(tr("Find"), QKeySequence::Find, [this] {
        if (m_findEnabled)
            m_findBar->showFind();
    });
    addAction(tr("Replace"), QKeySequence(Qt::CTRL | Qt::Key_H), [this] {
        if (m_findEnabled && !m_editor->isReadOnly())
            m_findBar->showReplace();
    });
    addAction(tr("Find Next"), QKeySequence::FindNext, [this] { m_findBar->findNext(true); });
    addAction(tr("Find Previous"), QKeySequence::FindPrevious,
              [this] { m_findBar->findNext(false); });
}

CodeEditorView::~CodeEditorView() = default;

} // namespace Sandbox::Ui
