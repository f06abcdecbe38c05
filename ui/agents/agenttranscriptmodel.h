#pragma once

#include <client/agenttypes.h>

#include <QAbstractListModel>
#include <QDateTime>
#include <QHash>
#include <QList>

namespace Sandbox::Ui {

// The transcript of an agent session as a flat list: the user's prompts and the agent's events
// (docs/protocol.md 4.7), one row each. A tool result is merged into the row of its tool call.
// Rows are only ever appended (or all cleared), so a view over 10 000 rows stays cheap.
class AgentTranscriptModel final : public QAbstractListModel
{
    Q_OBJECT

public:
    enum class Kind { Prompt, Text, Thinking, ToolCall, FileChange, Error, Result };
    Q_ENUM(Kind)

    enum Role {
        KindRole = Qt::UserRole + 1, // Kind as int
        TitleRole,                   // one line: "Write /workspace/a.txt", "Thinking", ...
        BodyRole,                    // markdown text, a tool's input and output, a diff
        IsErrorRole,                 // a failed tool call or file change, an error, a failed run
        ExpandedRole, // collapsible rows (tool calls, thinking, file changes): shown open
        CollapsibleRole,
        TurnRole,
        TimeRole,    // QDateTime when the row was added
        PendingRole, // a tool call still waiting for its result
        // Error cards (an error, a failed run, in the user's terms; AgentProblem):
        ProblemRole, // AgentProblem::Kind as int; -1 for a row that is no card
        RawTextRole, // the agent's or the engine's own words, behind "Details" ("" when the
                     // body is already those words)
        FixRole,     // the text of the card's fix button ("" for none)
        HostsRole,   // QStringList: the allow entries a HostDenied card's fix allows
    };

    explicit AgentTranscriptModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QHash<int, QByteArray> roleNames() const override;

    void addPrompt(const QString &prompt);
    void addEvent(const Sandbox::AgentEvent &event);
    // Many at once (a replay, a long backlog): one insertion for all.
    void addEvents(const QList<Sandbox::AgentEvent> &events);
    // The end of a run: a closing row when it failed (the success text came as a Text event).
    void addRunEnd(const Sandbox::AgentRunResult &result);
    // A note in the error colour, as it is (a stop, a keyring failure): no card.
    void addError(const QString &message);
    // What went wrong with a run, from the engine's or the CLI's words: a card that says it in
    // the user's terms with its fix (AgentProblem), the words kept behind "Details".
    void addProblem(const QString &message);
    void clear();

    // The agent type whose CLI's words the cards explain (claude-code, opencode, codex).
    void setAgentType(const QString &type) { m_agentType = type; }
    // The allow entries the sandbox's network refused since the last prompt (network.denied).
    QStringList deniedHosts() const { return m_denied; }

    void toggleExpanded(int row);

private:
    struct Item
    {
        Kind kind = Kind::Text;
        QString title;
        QString body;
        QString toolId;
        bool isError = false;
        bool expanded = false;
        bool pending = false;
        int turn = 0;
        QDateTime time;
        int problem = -1; // AgentProblem::Kind; -1: no card
        QString raw;
        QString fix;
        QStringList hosts;
    };
    // Makes `item` the card of `message` (explained with the run's refused hosts).
    void explain(Item *item, const QString &message) const;
    // The error `message` turns the row before it into its card when that row is the same
    // words as the agent's text (Claude Code says a failure as a text first): true if it did.
    bool mergeIntoLastText(const QString &message);
    // Whether a card since the last prompt already says what `card` says.
    bool shownThisRun(const Item &card) const;
    // Returns false when the event only updated an existing row (or is not shown).
    bool itemFor(const Sandbox::AgentEvent &event, Item *item);
    void append(QList<Item> items);

    QList<Item> m_items;
    QHash<QString, int> m_toolRows; // tool call id -> row
    QString m_agentType;
    QStringList m_denied; // refused allow entries since the last prompt (bounded)
    int m_runStart = 0;   // the row of the last prompt
};

} // namespace Sandbox::Ui
