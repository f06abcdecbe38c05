#include "sandboxworkspace.h"

#include "sandboxpageregistry.h"

#include "../doctor/limitsbadge.h"
#include "../editor/editorpage.h"

#include <QJsonArray>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabBar>
#include <QTabWidget>
#include <QVBoxLayout>

namespace Sandbox::Ui {

SandboxWorkspace::SandboxWorkspace(Client *client, const SandboxInfo &sandbox,
                                   const SandboxPageRegistry &registry, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_sandbox(sandbox)
    , m_horizontal(new QSplitter(Qt::Horizontal, this))
    , m_vertical(new QSplitter(Qt::Vertical, m_horizontal))
    , m_side(new QTabWidget(m_horizontal))
    , m_documentStack(new QStackedWidget(m_vertical))
    , m_documents(new QTabWidget(m_documentStack))
    , m_documentPlaceholder(new QLabel(m_documentStack))
    , m_panel(new QTabWidget(m_vertical))
    , m_limits(new LimitsBadge(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    // A slim line above the pages, only when a limit of the sandbox does not hold.
    m_limits->setContentsMargins(8, 3, 8, 3);
    m_limits->setLimits(sandbox.limits);
    layout->addWidget(m_limits);
    layout->addWidget(m_horizontal);

    m_horizontal->addWidget(m_side);
    m_horizontal->addWidget(m_vertical);
    m_horizontal->setStretchFactor(0, 0);
    m_horizontal->setStretchFactor(1, 1);
    m_horizontal->setChildrenCollapsible(false);
    m_vertical->addWidget(m_documentStack);
    m_vertical->addWidget(m_panel);
    m_vertical->setStretchFactor(0, 3);
    m_vertical->setStretchFactor(1, 2);
    m_vertical->setChildrenCollapsible(false);

    for (QTabWidget *tabs : {m_side, m_documents, m_panel}) {
        tabs->setDocumentMode(true);
        tabs->setUsesScrollButtons(true);
    }
    m_documents->setTabsClosable(true);
    m_documents->setMovable(true);
    m_documents->setElideMode(Qt::ElideMiddle);
    connect(m_documents, &QTabWidget::tabCloseRequested, this, &SandboxWorkspace::closeDocument);

    auto *placeholder = static_cast<QLabel *>(m_documentPlaceholder);
    placeholder->setText(tr("Open a file from the tree on the left (double-click or Enter)\n"
                            "to edit it here; Ctrl+S saves it back to the sandbox."));
    placeholder->setAlignment(Qt::AlignCenter);
    placeholder->setWordWrap(true);
    placeholder->setStyleSheet(QStringLiteral("color: palette(mid);"));
    m_documentStack->addWidget(m_documents);
    m_documentStack->addWidget(m_documentPlaceholder);

    SandboxPageContext context;
    context.client = client;
    context.sandbox = sandbox;
    context.workspace = this;
    for (const SandboxPageFactory *factory : registry.factoriesFor(sandbox)) {
        SandboxPage *page = factory->create(context, this);
        if (!page)
            continue;
        page->setObjectName(factory->id());
        m_factoryPages.insert(factory->id(), page);
        addPage(page, factory->area(), false);
    }
    m_side->tabBar()->setVisible(m_side->count() > 1);
    m_side->setVisible(m_side->count() > 0);
    m_panel->setVisible(m_panel->count() > 0);
    m_horizontal->setSizes({260, 900});
    m_vertical->setSizes({420, 300});
    updateDocumentPlaceholder();
}

SandboxWorkspace::~SandboxWorkspace() = default;

QString SandboxWorkspace::title() const
{
    return m_sandbox.name.isEmpty() ? m_sandbox.id : m_sandbox.name;
}

void SandboxWorkspace::setSandbox(const SandboxInfo &sandbox)
{
    m_sandbox = sandbox;
    m_limits->setLimits(sandbox.limits);
    for (SandboxPage *p : pages())
        p->sandboxChanged(sandbox);
}

QTabWidget *SandboxWorkspace::areaWidget(SandboxPageFactory::Area area) const
{
    switch (area) {
    case SandboxPageFactory::Area::Side:
        return m_side;
    case SandboxPageFactory::Area::Documents:
        return m_documents;
    case SandboxPageFactory::Area::Panel:
        return m_panel;
    }
    return m_documents;
}

void SandboxWorkspace::addPage(SandboxPage *page, SandboxPageFactory::Area area, bool closable)
{
    QTabWidget *tabs = areaWidget(area);
    const int index = tabs->addTab(page, page->title());
    tabs->setTabToolTip(index, page->toolTip());
    if (!closable && tabs->tabsClosable()) {
        tabs->tabBar()->setTabButton(index, QTabBar::RightSide, nullptr);
        tabs->tabBar()->setTabButton(index, QTabBar::LeftSide, nullptr);
    }
    connect(page, &SandboxPage::titleChanged, this, [this, page] { updateTab(page); });
    connect(page, &SandboxPage::message, this, &SandboxWorkspace::message);
    updateDocumentPlaceholder();
}

void SandboxWorkspace::updateTab(SandboxPage *page)
{
    for (QTabWidget *tabs : {m_side, m_documents, m_panel}) {
        const int i = tabs->indexOf(page);
        if (i >= 0) {
            tabs->setTabText(i, page->title());
            tabs->setTabToolTip(i, page->toolTip());
        }
    }
}

QList<SandboxPage *> SandboxWorkspace::pages() const
{
    QList<SandboxPage *> out;
    for (QTabWidget *tabs : {m_side, m_documents, m_panel}) {
        for (int i = 0; i < tabs->count(); ++i) {
            if (auto *p = qobject_cast<SandboxPage *>(tabs->widget(i)))
                out << p;
        }
    }
    return out;
}

SandboxPage *SandboxWorkspace::page(const QString &factoryId) const
{
    return m_factoryPages.value(factoryId);
}

QList<EditorPage *> SandboxWorkspace::editors() const
{
    QList<EditorPage *> out;
    for (int i = 0; i < m_documents->count(); ++i) {
        if (auto *e = qobject_cast<EditorPage *>(m_documents->widget(i)))
            out << e;
    }
    return out;
}

EditorPage *SandboxWorkspace::currentEditor() const
{
    return qobject_cast<EditorPage *>(m_documents->currentWidget());
}

EditorPage *SandboxWorkspace::openFile(const QString &path)
{
    for (EditorPage *e : editors()) {
        if (e->path() == path) {
            showPage(e);
            return e;
        }
    }
    SandboxPageContext context;
    context.client = m_client;
    context.sandbox = m_sandbox;
    context.workspace = this;
    auto *editor = new EditorPage(context, path, this);
    addPage(editor, SandboxPageFactory::Area::Documents, true);
    showPage(editor);
    return editor;
}

void SandboxWorkspace::showPage(SandboxPage *page)
{
    for (QTabWidget *tabs : {m_side, m_documents, m_panel}) {
        if (tabs->indexOf(page) >= 0) {
            tabs->setCurrentWidget(page);
            page->setFocus(Qt::OtherFocusReason);
        }
    }
    updateDocumentPlaceholder();
}

void SandboxWorkspace::fileRenamed(const QString &from, const QString &to)
{
    for (EditorPage *e : editors()) {
        if (e->path() == from)
            e->setPath(to);
        else if (e->path().startsWith(from + u'/'))
            e->setPath(to + e->path().mid(from.size()));
    }
}

void SandboxWorkspace::fileDeleted(const QString &path)
{
    for (EditorPage *e : editors()) {
        if (e->path() == path || e->path().startsWith(path + u'/'))
            e->markDeleted();
    }
}

void SandboxWorkspace::cycleDocuments(int delta)
{
    const int n = m_documents->count();
    if (n > 1)
        m_documents->setCurrentIndex((m_documents->currentIndex() + delta + n) % n);
}

bool SandboxWorkspace::closeCurrentEditor()
{
    const int index = m_documents->currentIndex();
    if (!qobject_cast<EditorPage *>(m_documents->widget(index)))
        return false;
    const int before = m_documents->count();
    closeDocument(index);
    return m_documents->count() < before;
}

void SandboxWorkspace::closeDocument(int index)
{
    auto *page = qobject_cast<SandboxPage *>(m_documents->widget(index));
    if (!page || !qobject_cast<EditorPage *>(page))
        return; // factory pages stay
    if (!page->maybeClose())
        return;
    m_documents->removeTab(index);
    page->deleteLater();
    updateDocumentPlaceholder();
}

void SandboxWorkspace::updateDocumentPlaceholder()
{
    m_documentStack->setCurrentWidget(m_documents->count() > 0 ? static_cast<QWidget *>(m_documents)
                                                               : m_documentPlaceholder);
}

bool SandboxWorkspace::maybeClose()
{
    for (SandboxPage *p : pages()) {
        if (!p->maybeClose())
            return false;
    }
    return true;
}

QJsonObject SandboxWorkspace::saveState() const
{
    QJsonArray files;
    for (EditorPage *e : editors())
        files.append(e->saveState());
    QJsonObject pageStates;
    for (auto it = m_factoryPages.cbegin(); it != m_factoryPages.cend(); ++it) {
        const QJsonObject s = it.value()->saveState();
        if (!s.isEmpty())
            pageStates.insert(it.key(), s);
    }
    QJsonObject state{{QStringLiteral("files"), files},
                      {QStringLiteral("pages"), pageStates},
                      {QStringLiteral("horizontal"),
                       QString::fromLatin1(m_horizontal->saveState().toBase64())},
                      {QStringLiteral("vertical"),
                       QString::fromLatin1(m_vertical->saveState().toBase64())}};
    if (auto *e = currentEditor())
        state.insert(QStringLiteral("current"), e->path());
    return state;
}

void SandboxWorkspace::restoreState(const QJsonObject &state)
{
    const QJsonObject pageStates = state.value(QStringLiteral("pages")).toObject();
    for (auto it = pageStates.begin(); it != pageStates.end(); ++it) {
        if (SandboxPage *p = page(it.key()))
            p->restoreState(it.value().toObject());
    }
    for (const QJsonValue &v : state.value(QStringLiteral("files")).toArray()) {
        const QJsonObject f = v.toObject();
        const QString path = f.value(QStringLiteral("path")).toString();
        if (path.startsWith(QStringLiteral("/workspace")))
            openFile(path)->restoreState(f);
    }
    const QString current = state.value(QStringLiteral("current")).toString();
    for (EditorPage *e : editors()) {
        if (e->path() == current)
            showPage(e);
    }
    const auto restoreSplitter = [&](QSplitter *s, const char *key) {
        const QByteArray b = QByteArray::fromBase64(
            state.value(QLatin1String(key)).toString().toLatin1());
        if (!b.isEmpty())
            s->restoreState(b);
    };
    restoreSplitter(m_horizontal, "horizontal");
    restoreSplitter(m_vertical, "vertical");
}

} // namespace Sandbox::Ui
