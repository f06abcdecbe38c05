#include "sandboxpageregistry.h"

#include <algorithm>

namespace Sandbox::Ui {

SandboxPageRegistry::SandboxPageRegistry() = default;
SandboxPageRegistry::~SandboxPageRegistry() = default;

void SandboxPageRegistry::add(std::unique_ptr<SandboxPageFactory> factory)
{
    if (!factory)
        return;
    for (auto &f : m_factories) {
        if (f->id() == factory->id()) {
            f = std::move(factory);
            return;
        }
    }
    m_factories.push_back(std::move(factory));
}

const SandboxPageFactory *SandboxPageRegistry::find(const QString &id) const
{
    for (const auto &f : m_factories) {
        if (f->id() == id)
            return f.get();
    }
    return nullptr;
}

QList<const SandboxPageFactory *> SandboxPageRegistry::factoriesFor(const SandboxInfo &sandbox) const
{
    QList<const SandboxPageFactory *> out;
    for (const auto &f : m_factories) {
        if (f->appliesTo(sandbox))
            out.append(f.get());
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const SandboxPageFactory *a, const SandboxPageFactory *b) {
                         if (a->area() != b->area())
                             return int(a->area()) < int(b->area());
                         return a->order() < b->order();
                     });
    return out;
}

} // namespace Sandbox::Ui
