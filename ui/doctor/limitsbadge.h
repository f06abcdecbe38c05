#pragma once

#include <client/types.h>

#include <QLabel>

namespace Sandbox::Ui {

// A small "limits not enforced" indicator for a sandbox (docs/protocol.md 3.1): hidden when every
// limit holds or the backend makes no claim; otherwise names the limits that do not hold, with
// each one's reason (and fix) in the tooltip.
class LimitsBadge final : public QLabel
{
    Q_OBJECT

public:
    explicit LimitsBadge(QWidget *parent = nullptr);

    void setLimits(const SandboxLimits &limits);
    // The limits that do not hold, in protocol order ("memory", "pids", "cpu", "disk").
    QStringList notEnforced() const { return m_notEnforced; }

private:
    QStringList m_notEnforced;
};

} // namespace Sandbox::Ui
