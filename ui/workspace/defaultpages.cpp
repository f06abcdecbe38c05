// The pages every opened sandbox gets. Agent sessions (ui/agents) and SQL consoles (ui/sql)
// register their factories here too.
#include "sandboxpageregistry.h"

#include "../console/consolepage.h"
#include "../files/filespage.h"
#include "../terminal/terminalpage.h"
#include "sandboxworkspace.h"

#include <agents/agentsessionview.h>
#include <network/networkview.h>
#include <sql/sqlconsole.h>

#include <protocol/sandboxenums.h>

#include <QVBoxLayout>

#include <functional>
#include <utility>

namespace Sandbox::Ui {

namespace {

class ConsolePageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("console"); }
    QString title() const override { return QObject::tr("Console"); }
    Area area() const override { return Area::Panel; }
    bool appliesTo(const SandboxInfo &) const override { return true; }
    int order() const override { return 0; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        return new ConsolePage(context, parent);
    }
};

// A terminal beside the console: a shell on a pseudo-terminal (vim, htop, Tab completion).
class TerminalPageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("terminal"); }
    QString title() const override { return QObject::tr("Terminal"); }
    Area area() const override { return Area::Panel; }
    bool appliesTo(const SandboxInfo &) const override { return true; }
    int order() const override { return 1; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        return new TerminalPage(context, parent);
    }
};

class FilesPageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("files"); }
    QString title() const override { return QObject::tr("Files"); }
    Area area() const override { return Area::Side; }
    bool appliesTo(const SandboxInfo &) const override { return true; }
    int order() const override { return 0; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        return new FilesPage(context, parent);
    }
};

// A page around a self-contained widget of another area (ui/agents, ui/sql). The widget is made
// when the page is first shown if the sandbox sleeps: what it loads at once (a schema, a model
// list) would wake it, and a restored tab in the background must not.
class WidgetPage final : public SandboxPage
{
public:
    using Make = std::function<QWidget *(WidgetPage *page)>;

    WidgetPage(const SandboxPageContext &context, const QString &title, Make make, QWidget *parent)
        : SandboxPage(context, parent)
        , m_title(title)
        , m_make(std::move(make))
    {
        auto *layout = new QVBoxLayout(this);
        layout->setContentsMargins(0, 0, 0, 0);
        // The hosted widget's minimum size must not squeeze the sidebar and the file pane: the
        // document area takes what the window's splitters give it.
        setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
        const SandboxStatus status = fromWire<SandboxStatus>(context.sandbox.status);
        if (status != SandboxStatus::Sleeping && status != SandboxStatus::Stopped)
            makeWidget();
    }
    QString title() const override { return m_title; }

protected:
    void showEvent(QShowEvent *event) override
    {
        SandboxPage::showEvent(event);
        makeWidget();
    }

private:
    void makeWidget()
    {
        if (!m_make)
            return;
        const Make make = std::exchange(m_make, nullptr);
        layout()->addWidget(make(this));
    }

    QString m_title;
    Make m_make;
};

class AgentSessionPageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("agent-session"); }
    QString title() const override { return QObject::tr("Agent"); }
    Area area() const override { return Area::Documents; }
    bool appliesTo(const SandboxInfo &s) const override
    {
        return fromWire<SandboxKind>(s.kind) == SandboxKind::Agent;
    }
    int order() const override { return 0; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        const auto make = [client = context.client, sandbox = context.sandbox,
                           secrets = context.secrets](WidgetPage *page) {
            auto *view = new AgentSessionView(client, sandbox, page);
            view->setSecretStore(secrets);
            // The agent writes files while it runs: the file pane follows.
            QObject::connect(view, &AgentSessionView::runStarted, page,
                             [page] { Q_EMIT page->filesTouched(true); });
            QObject::connect(view, &AgentSessionView::runFinished, page,
                             [page] { Q_EMIT page->filesTouched(false); });
            QObject::connect(view, &AgentSessionView::runFailed, page,
                             [page] { Q_EMIT page->filesTouched(false); });
            if (SandboxWorkspace *ws = page->context().workspace) {
                QObject::connect(view, &AgentSessionView::fixRequested, ws,
                                 &SandboxWorkspace::agentFixRequested);
                QObject::connect(view, &AgentSessionView::sandboxChanged, ws,
                                 &SandboxWorkspace::sandboxChanged);
            }
            return view;
        };
        return new WidgetPage(context, title(), make, parent);
    }
};

class SqlConsolePageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("sql-console"); }
    QString title() const override { return QObject::tr("SQL"); }
    Area area() const override { return Area::Documents; }
    bool appliesTo(const SandboxInfo &s) const override
    {
        return fromWire<SandboxKind>(s.kind) == SandboxKind::Database;
    }
    int order() const override { return 0; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        const auto make = [client = context.client, id = context.sandbox.id](WidgetPage *page) {
            return new SqlConsole(client, id, page);
        };
        return new WidgetPage(context, title(), make, parent);
    }
};

// Every sandbox's network policy and refused connections (docs/protocol.md 3.5, 4.9).
class NetworkPageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("network"); }
    QString title() const override { return QObject::tr("Network"); }
    Area area() const override { return Area::Documents; }
    bool appliesTo(const SandboxInfo &) const override { return true; }
    int order() const override { return 50; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        const auto make = [client = context.client, sandbox = context.sandbox](WidgetPage *page) {
            auto *view = new NetworkView(client, sandbox, page);
            QObject::connect(view, &NetworkView::message, page, &SandboxPage::message);
            return view;
        };
        return new WidgetPage(context, title(), make, parent);
    }
};

} // namespace

void registerDefaultPages(SandboxPageRegistry &registry)
{
    registry.add(std::make_unique<ConsolePageFactory>());
    registry.add(std::make_unique<TerminalPageFactory>());
    registry.add(std::make_unique<FilesPageFactory>());
    registry.add(std::make_unique<AgentSessionPageFactory>());
    registry.add(std::make_unique<SqlConsolePageFactory>());
    registry.add(std::make_unique<NetworkPageFactory>());
}

} // namespace Sandbox::Ui
