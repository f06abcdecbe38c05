#include "sandboxpage.h"

namespace Sandbox::Ui {

SandboxPage::SandboxPage(const SandboxPageContext &context, QWidget *parent)
    : QWidget(parent)
    , m_context(context)
{}

SandboxPage::~SandboxPage() = default;

void SandboxPage::sandboxChanged(const SandboxInfo &sandbox)
{
    m_context.sandbox = sandbox;
}

} // namespace Sandbox::Ui
