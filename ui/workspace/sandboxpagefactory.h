#pragma once

#include "sandboxpage.h"

#include <QString>

namespace Sandbox::Ui {

// Makes one kind of page for the sandboxes it applies to. Register an instance with
// SandboxPageRegistry (see registerDefaultPages() in ui/workspace/defaultpages.cpp); every
// sandbox opened afterwards gets the page in the area the factory names.
//
//   class SqlConsoleFactory final : public SandboxPageFactory {
//       QString id() const override { return QStringLiteral("sql-console"); }
//       QString title() const override { return tr("SQL"); }
//       Area area() const override { return Area::Documents; }
//       bool appliesTo(const SandboxInfo &s) const override
//       { return fromWire<SandboxKind>(s.kind) == SandboxKind::Database; }
//       SandboxPage *create(const SandboxPageContext &c, QWidget *parent) const override
//       { return new SqlConsolePage(c, parent); }
//   };
class SandboxPageFactory
{
public:
    // Where a sandbox's workspace shows the page: the narrow pane on the left (files), the
    // tabbed document area (editors, agent session, SQL console), or the panel below (console).
    enum class Area { Side, Documents, Panel };

    virtual ~SandboxPageFactory() = default;

    // Stable and unique ("console", "files", "sql-console"): kept with the saved layout.
    virtual QString id() const = 0;
    virtual QString title() const = 0;
    virtual Area area() const = 0;
    // By kind ("agent", "database") and type ("claude-code", "postgres", ...).
    virtual bool appliesTo(const SandboxInfo &sandbox) const = 0;
    // Lower comes first within its area.
    virtual int order() const { return 100; }
    virtual SandboxPage *create(const SandboxPageContext &context, QWidget *parent) const = 0;
};

} // namespace Sandbox::Ui
