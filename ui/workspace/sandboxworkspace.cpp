#include "sandboxworkspace.h"

#include "../common/uistyle.h"

#include "sandboxpageregistry.h"

#include "../doctor/limitsbadge.h"
#include "../editor/editorpage.h"

#include <protocol/sandboxenums.h>

#include <QJsonArray>
#include <QLabel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace Sandbox::Ui {

SandboxWorkspace::SandboxWorkspace(Client *client, const SandboxInfo &sandbox,
                                   const SandboxPageRegistry &registry, QWidget *parent,
                                   SecretStore *secrets)
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
    m_limits->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    m_limits->setLimits(sandbox.limits);
    layout->addWidget(m_limits);
    layout->addWidget(m_horizontal, 1);

    m_horizontal->addWidget(m_side);
    m_horizontal->addWidget(m_vertical);
    m_horizontal->setStretchFactor(0, 0);
    m_horizontal->setStretchFactor(1, 1);
    // The file pane and the console may be collapsed (dragged shut, or View ▸ Toggle); the
    // documents never: they are what the user came for.
    m_horizontal->setChildrenCollapsible(true);
    m_horizontal->setCollapsible(1, false);
    m_vertical->addWidget(m_documentStack);
    m_vertical->addWidget(m_panel);
    m_vertical->setStretchFactor(0, 3);
    m_vertical->setStretchFactor(1, 2);
    m_vertical->setChildrenCollapsible(true);
    m_vertical->setCollapsible(0, false);

    for (QTabWidget *tabs : {m_side, m_documents, m_panel}) {
        tabs->setDocumentMode(true);
        tabs->setUsesScrollButtons(true);
    }
    m_documents->setTabsClosable(true);
    Style::useQuietCloseButtons(m_documents->tabBar());
    m_documents->setMovable(true);
    m_documents->setElideMode(Qt::ElideMiddle);
    connect(m_documents, &QTabWidget::tabCloseRequested, this, &SandboxWorkspace::closeDocument);

    auto *placeholder = static_cast<QLabel *>(m_documentPlaceholder);
    placeholder->setText(tr("Open a file from the tree on the left (double-click or Enter)\n"
                            "to edit it here; Ctrl+S saves it back to the sandbox."));
    placeholder->setAlignment(Qt::AlignCenter);
    placeholder->setWordWrap(true);
    Style::setTextTone(placeholder, Style::Tone::Muted);
    m_documentStack->addWidget(m_documents);
    m_documentStack->addWidget(m_documentPlaceholder);

    SandboxPageContext context;
    context.client = client;
    context.sandbox = sandbox;
    context.workspace = this;
    context.secrets = secrets;
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
    // While a page is at work in the sandbox (a command, an agent), the file pane follows it.
    m_filesTimer.setInterval(2000);
    connect(&m_filesTimer, &QTimer::timeout, this, &SandboxWorkspace::notifyFilesChanged);
    // A database's files are its server's (its SQL console has the schema beside it): the file
    // pane starts collapsed there (Ctrl+B shows it).
    if (fromWire<SandboxKind>(sandbox.kind) == SandboxKind::Database) {
        m_sideSizes = {220, 900};
        m_horizontal->setSizes({0, 1120});
    } else {
        m_horizontal->setSizes({220, 900});
    }
    // A database's SQL console (results included) gets most of the height; an agent's console
    // shares it with the documents.
    if (fromWire<SandboxKind>(sandbox.kind) == SandboxKind::Database)
        m_vertical->setSizes({640, 100});
    else
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

void SandboxWorkspace::togglePane(Qt::Orientation orientation)
{
    QSplitter *s = orientation == Qt::Horizontal ? m_horizontal : m_vertical;
    const int pane = orientation == Qt::Horizontal ? 0 : 1;
    QList<int> sizes = s->sizes();
    QList<int> &remembered = orientation == Qt::Horizontal ? m_sideSizes : m_panelSizes;
    if (sizes.value(pane) > 0) {
        remembered = sizes;
        sizes[1 - pane] += sizes[pane];
        sizes[pane] = 0;
        s->setSizes(sizes);
    } else {
        s->setSizes(
            remembered.size() == 2 && remembered.value(pane) > 0
                ? remembered
                : (orientation == Qt::Horizontal ? QList<int>{220, 900} : QList<int>{420, 300}));
    }
}

bool SandboxWorkspace::isPaneCollapsed(Qt::Orientation orientation) const
{
    QSplitter *s = orientation == Qt::Horizontal ? m_horizontal : m_vertical;
    return s->sizes().value(orientation == Qt::Horizontal ? 0 : 1) == 0;
}

void SandboxWorkspace::notifyFilesChanged()
{
    for (SandboxPage *p : pages())
        p->filesMayHaveChanged();
}

void SandboxWorkspace::setConnected(bool connected)
{
    for (SandboxPage *p : pages())
        p->connectionChanged(connected);
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
    connect(page, &SandboxPage::filesTouched, this, [this, page](bool busy) {
        if (busy)
            m_busyPages.insert(page);
        else
            m_busyPages.remove(page);
        if (busy && !m_filesTimer.isActive())
            m_filesTimer.start();
        else if (m_busyPages.isEmpty())
            m_filesTimer.stop();
        notifyFilesChanged();
    });
    // The timer as the context: gone before the pages when the workspace is destroyed.
    connect(page, &QObject::destroyed, &m_filesTimer, [this, page] { m_busyPages.remove(page); });
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
