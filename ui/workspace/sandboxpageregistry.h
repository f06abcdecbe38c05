#pragma once

#include "sandboxpagefactory.h"

#include <memory>
#include <vector>

namespace Sandbox::Ui {

// The page factories of the app, owned here; one registry per main window (no global state).
class SandboxPageRegistry final
{
public:
    SandboxPageRegistry();
    ~SandboxPageRegistry();
    SandboxPageRegistry(const SandboxPageRegistry &) = delete;
    SandboxPageRegistry &operator=(const SandboxPageRegistry &) = delete;

    // A factory with an id already registered replaces it.
    void add(std::unique_ptr<SandboxPageFactory> factory);
    const SandboxPageFactory *find(const QString &id) const;
    // The factories that apply to `sandbox`, by area and then order().
    QList<const SandboxPageFactory *> factoriesFor(const SandboxInfo &sandbox) const;
    int size() const { return int(m_factories.size()); }

private:
    std::vector<std::unique_ptr<SandboxPageFactory>> m_factories;
};

// The built-in pages: console (panel) and files (side) for every sandbox. Other areas add theirs
// here (agent session, SQL console).
void registerDefaultPages(SandboxPageRegistry &registry);

} // namespace Sandbox::Ui
