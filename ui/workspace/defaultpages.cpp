// The pages every opened sandbox gets. Agent sessions (ui/agents) and SQL consoles (ui/sql)
// register their factories here too.
#include "sandboxpageregistry.h"

#include "../console/consolepage.h"
#include "../files/filespage.h"
#include "../terminal/terminalpage.h"

#include <agents/agentsessionview.h>
#include <sql/sqlconsole.h>

#include <QVBoxLayout>

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

// A page around a self-contained widget of another area (ui/agents, ui/sql).
class WidgetPage final : public SandboxPage
{
public:
    WidgetPage(const SandboxPageContext &context, const QString &title, QWidget *parent)
        : SandboxPage(context, parent)
        , m_title(title)
    {
        auto *layout = new QVBoxLayout(this);
        layout->setContentsMargins(0, 0, 0, 0);
        // The hosted widget's minimum size must not squeeze the sidebar and the file pane: the
        // document area takes what the window's splitters give it.
        setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
    }
    void setWidget(QWidget *widget) { layout()->addWidget(widget); }
    QString title() const override { return m_title; }

private:
    QString m_title;
};

class AgentSessionPageFactory final : public SandboxPageFactory
{
public:
    QString id() const override { return QStringLiteral("agent-session"); }
    QString title() const override { return QObject::tr("Agent"); }
    Area area() const override { return Area::Documents; }
    bool appliesTo(const SandboxInfo &s) const override { return s.kind == QLatin1String("agent"); }
    int order() const override { return 0; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        auto *page = new WidgetPage(context, title(), parent);
        page->setWidget(new AgentSessionView(context.client, context.sandbox, page));
        return page;
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
        return s.kind == QLatin1String("database");
    }
    int order() const override { return 0; }
    SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const override
    {
        auto *page = new WidgetPage(context, title(), parent);
        page->setWidget(new SqlConsole(context.client, context.sandbox.id, page));
        return page;
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
}

} // namespace Sandbox::Ui
