#include "limitsbadge.h"

#include "common/uistyle.h"

namespace Sandbox::Ui {

LimitsBadge::LimitsBadge(QWidget *parent)
    : QLabel(parent)
{
    setObjectName(QStringLiteral("limitsBadge"));
    setTextFormat(Qt::PlainText);
    hide();
}

void LimitsBadge::setLimits(const SandboxLimits &limits)
{
    m_notEnforced.clear();
    QStringList reasons;
    if (limits.enforced.value_or(true) == false) {
        for (const QString &name : {QStringLiteral("memory"), QStringLiteral("pids"),
                                    QStringLiteral("cpu"), QStringLiteral("disk")}) {
            const auto it = limits.enforcement.constFind(name);
            if (it == limits.enforcement.constEnd() || it->enforced)
                continue;
            m_notEnforced.append(name);
            reasons.append(tr("%1: %2").arg(name, it->reason));
        }
        if (m_notEnforced.isEmpty()) // said "not enforced" without saying which
            reasons.append(tr("the engine says not every limit of this sandbox holds"));
    }
    if (reasons.isEmpty()) {
        hide();
        return;
    }
    const QString which = m_notEnforced.isEmpty() ? tr("some")
                                                  : m_notEnforced.join(QStringLiteral(", "));
    setText(QStringLiteral("\u26a0 ") + tr("Limits not enforced: %1").arg(which));
    QPalette p = palette();
    p.setColor(QPalette::WindowText, Style::statusColor(QStringLiteral("starting")));
    setPalette(p);
    setToolTip(tr("These limits of the sandbox's size do not hold on this engine:\n")
               + reasons.join(u'\n')
               + tr("\n\nHelp ▸ System check says how to fix it on this computer."));
    show();
}

} // namespace Sandbox::Ui
