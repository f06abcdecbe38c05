#pragma once

#include <QListView>

namespace Sandbox::Ui {

class AgentTranscriptModel;
class ProblemCard;
class TranscriptDelegate;

// A live transcript of an agent session over an AgentTranscriptModel: markdown text, collapsible
// tool calls and thinking (click to open or close), file changes with their diff, errors as cards
// in the user's terms with their fix (ProblemCard). Rows are
// laid out lazily in batches and their heights cached, so 10 000 rows scroll and grow smoothly.
// Follows the newest row while the view is scrolled to the bottom.
class AgentTranscriptView final : public QListView
{
    Q_OBJECT

public:
    explicit AgentTranscriptView(QWidget *parent = nullptr);

    void setTranscript(AgentTranscriptModel *model); // not owned
    AgentTranscriptModel *transcript() const { return m_model; }
    // The card of an error row (AgentTranscriptModel::ProblemRole), or null.
    ProblemCard *cardAt(int row) const;

Q_SIGNALS:
    // A card's fix button: AgentProblem::Kind as int, and for HostDenied the entries to allow.
    void fixRequested(int problemKind, const QStringList &hosts);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void onRowsInserted(int first, int last);
    // Gives the error rows among these a card (once).
    void addCards(int first, int last);

    AgentTranscriptModel *m_model = nullptr;
    TranscriptDelegate *m_delegate; // owned (child)
    bool m_follow = true;
};

} // namespace Sandbox::Ui
