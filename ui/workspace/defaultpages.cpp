// The pages every opened sandbox gets. Agent sessions (ui/agents) and SQL consoles (ui/sql)
// register their factories here too.
#include "sandboxpageregistry.h"

#include "../console/consolepage.h"
#include "../files/filespage.h"

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

} // namespace

void registerDefaultPages(SandboxPageRegistry &registry)
{
    registry.add(std::make_unique<ConsolePageFactory>());
    registry.add(std::make_unique<FilesPageFactory>());
}

} // namespace Sandbox::Ui
