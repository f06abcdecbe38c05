#pragma once

#include <QLineEdit>
#include <QStringList>

namespace Sandbox::Ui {

// The console's command line: Enter submits, Up/Down walk the history (what was typed before
// walking is kept), consecutive duplicates are stored once, at most maxHistory() entries.
class CommandLine final : public QLineEdit
{
    Q_OBJECT

public:
    static constexpr int DefaultMaxHistory = 1000;

    explicit CommandLine(QWidget *parent = nullptr);

    QStringList history() const { return m_history; }
    void setHistory(const QStringList &history);
    void addToHistory(const QString &command);
    int maxHistory() const { return m_maxHistory; }

Q_SIGNALS:
    void submitted(const QString &command);

protected:
    void keyPressEvent(QKeyEvent *event) override;

private:
    void walk(int delta);

    QStringList m_history; // oldest first
    int m_maxHistory = DefaultMaxHistory;
    int m_index = -1; // -1: not walking
    QString m_draft;
};

} // namespace Sandbox::Ui
