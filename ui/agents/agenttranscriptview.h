#pragma once

#include <QListView>

namespace Sandbox::Ui {

class AgentTranscriptModel;
class TranscriptDelegate;

// A live transcript of an agent session over an AgentTranscriptModel: markdown text, collapsible
// tool calls and thinking (click to open or close), file changes with their diff, errors. Rows are
// laid out lazily in batches and their heights cached, so 10 000 rows scroll and grow smoothly.
// Follows the newest row while the view is scrolled to the bottom.
class AgentTranscriptView final : public QListView
{
    Q_OBJECT

public:
    explicit AgentTranscriptView(QWidget *parent = nullptr);

    void setTranscript(AgentTranscriptModel *model); // not owned
    AgentTranscriptModel *transcript() const { return m_model; }

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void onRowsInserted();

    AgentTranscriptModel *m_model = nullptr;
    TranscriptDelegate *m_delegate; // owned (child)
    bool m_follow = true;
};

} // namespace Sandbox::Ui
