#pragma once

#include <client/hostcheck.h>

#include <QDialog>

#include <optional>

class QLabel;
class QPushButton;
class QVBoxLayout;

namespace Sandbox::Ui {

// Help ▸ System check…, and the first run's check: what `sandboxd doctor` says about this
// computer, one row per check with its verdict and, when it is not ok, the exact fix (selectable,
// with a Copy button). Runs the check itself (HostCheck, asynchronous).
class DoctorDialog final : public QDialog
{
    Q_OBJECT

public:
    explicit DoctorDialog(QWidget *parent = nullptr);

    // Which sandboxd to ask and with which extra arguments (tests: a prepared tree's --root).
    void setProgram(const QString &sandboxd, const QStringList &extraArguments = {});
    // Runs the check (again); "Checking this computer…" meanwhile.
    void runCheck();
    // Shows a report or why there is none.
    void setReport(const Result<HostReport> &report);
    const std::optional<HostReport> &report() const { return m_report; }

Q_SIGNALS:
    void checked(bool hasFailures);

private:
    QWidget *makeRow(const HostCheckItem &item);
    void clearRows();

    HostCheck *m_check;        // owned (child)
    QLabel *m_host;            // owned by the layout
    QLabel *m_summary;         // owned by the layout
    QWidget *m_rows;           // owned by the scroll area
    QVBoxLayout *m_rowsLayout; // owned by m_rows
    QPushButton *m_again;      // owned by the button box
    std::optional<HostReport> m_report;
};

} // namespace Sandbox::Ui
