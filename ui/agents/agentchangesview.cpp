#include "agentchangesview.h"

#include "diffmodel.h"

#include "../common/uistyle.h"

#include <client/client.h>

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {

constexpr int kRunsListed = 50;

QString kindMark(AgentFileChange::Kind kind)
{
    switch (kind) {
    case AgentFileChange::Kind::Add:
        return QStringLiteral("A");
    case AgentFileChange::Kind::Delete:
        return QStringLiteral("D");
    case AgentFileChange::Kind::Update:
        break;
    }
    return QStringLiteral("M");
}

// 'A single line, for a picker: "Add a README" (12:04).'
QString runTitle(const AgentRunRecord &run)
{
    // A prompt that carried review comments is named by what the user typed below them.
    const QString typed = run.prompt.startsWith(AgentChangesView::tr("Review comments"))
                              ? run.prompt.section(QStringLiteral("\n\n"), -1)
                              : run.prompt;
    QString prompt = typed.section(u'\n', 0, 0).simplified();
    if (prompt.size() > 60)
        prompt = prompt.left(59) + QChar(0x2026);
    return QStringLiteral("%1 — %2").arg(run.startedAt.toLocalTime().toString(
                                             QStringLiteral("MMM d HH:mm")),
                                         prompt.isEmpty() ? run.runId : prompt);
}

QColor fileColor(AgentFileChange::Kind kind, const QPalette &palette)
{
    return Style::color(kind == AgentFileChange::Kind::Add      ? Style::Tone::Success
                        : kind == AgentFileChange::Kind::Delete ? Style::Tone::Error
                                                                : Style::Tone::Normal,
                        palette);
}

// The shell's quoting of one word.
QString shellQuote(const QString &s)
{
    QString q = s;
    q.replace(u'\'', QStringLiteral("'\\''"));
    return u'\'' + q + u'\'';
}

} // namespace

AgentChangesView::AgentChangesView(Client *client, const QString &sandboxId, QWidget *parent)
    : QWidget(parent)
    , m_client(client)
    , m_sandboxId(sandboxId)
    , m_runs(new QComboBox(this))
    , m_git(new QLabel(this))
    , m_status(new QLabel(this))
    , m_files(new QListWidget(this))
    , m_diffView(new QTableView(this))
    , m_diff(new DiffModel(this))
    , m_sideBySide(new QToolButton(this))
    , m_revert(new QPushButton(tr("Revert file"), this))
    , m_commit(new QPushButton(tr("Commit this turn"), this))
    , m_commentEdit(new QLineEdit(this))
    , m_addComment(new QPushButton(tr("Comment"), this))
    , m_commentList(new QListWidget(this))
{
    m_runs->setToolTip(tr("The turn to review: each prompt the agent ran"));
    m_runs->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_runs->setMinimumContentsLength(24);
    m_sideBySide->setText(tr("Side by side"));
    m_sideBySide->setCheckable(true);
    m_sideBySide->setToolTip(tr("Before and after the turn side by side, or one unified diff"));
    m_revert->setToolTip(tr("Put the file back as it was before this turn"));
    m_commit->setToolTip(tr("git add and git commit the files this turn changed"));
    m_commit->setVisible(false);
    m_git->setTextFormat(Qt::PlainText);
    m_status->setTextFormat(Qt::PlainText);
    m_status->setWordWrap(true);

    m_diff->setPalette(palette());
    m_diffView->setModel(m_diff);
    m_diffView->setFont(Style::monospaceFont());
    m_diffView->setShowGrid(false);
    m_diffView->setWordWrap(false);
    m_diffView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_diffView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_diffView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_diffView->verticalHeader()->hide();
    m_diffView->verticalHeader()->setDefaultSectionSize(m_diffView->fontMetrics().height() + 2);
    m_diffView->horizontalHeader()->setHighlightSections(false);

    m_commentEdit->setPlaceholderText(
        tr("A comment on the selected line, sent with the next prompt"));
    m_commentList->setMaximumHeight(80);
    m_commentList->setToolTip(tr("Comments for the agent; a double-click removes one"));
    m_commentList->hide();

    auto *top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Turn:"), this));
    top->addWidget(m_runs, 1);
    top->addWidget(m_git);
    top->addWidget(m_sideBySide);
    top->addWidget(m_revert);
    top->addWidget(m_commit);

    auto *splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(m_files);
    splitter->addWidget(m_diffView);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 4);
    splitter->setCollapsible(1, false);

    auto *commentRow = new QHBoxLayout;
    commentRow->addWidget(m_commentEdit, 1);
    commentRow->addWidget(m_addComment);

    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(top);
    layout->addWidget(m_status);
    layout->addWidget(splitter, 1);
    layout->addLayout(commentRow);
    layout->addWidget(m_commentList);

    connect(m_runs, &QComboBox::activated, this,
            [this](int i) { showRun(m_runs->itemData(i).toString()); });
    connect(m_files, &QListWidget::currentRowChanged, this, &AgentChangesView::showFile);
    connect(m_sideBySide, &QToolButton::toggled, this, [this](bool on) {
        m_diff->setLayout(on ? DiffModel::Layout::SideBySide : DiffModel::Layout::Unified);
        showFile(m_files->currentRow()); // column sizes for the layout
    });
    connect(m_revert, &QPushButton::clicked, this, [this] { revertSelected(); });
    connect(m_commit, &QPushButton::clicked, this, [this] { commitTurn(); });
    connect(m_addComment, &QPushButton::clicked, this, [this] {
        if (addComment(m_commentEdit->text()))
            m_commentEdit->clear();
    });
    connect(m_commentEdit, &QLineEdit::returnPressed, m_addComment, &QPushButton::click);
    connect(m_commentList, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem *item) {
        // Double-click removes a comment.
        const int row = m_commentList->row(item);
        if (row >= 0 && row < m_comments.size()) {
            m_comments.removeAt(row);
            updateComments();
        }
    });
    setStatus(tr("No turn yet."));
    m_revert->setEnabled(false);
}

AgentChangesView::~AgentChangesView() = default;

void AgentChangesView::setStatus(const QString &text, bool error)
{
    m_status->setText(text);
    m_status->setVisible(!text.isEmpty());
    Style::setTextTone(m_status, error ? Style::Tone::Error : Style::Tone::Muted);
}

void AgentChangesView::refresh()
{
    m_call = m_client->agents()
                 .runs(m_sandboxId, kRunsListed, this, [this](Result<QList<AgentRunRecord>> r) {
                     if (!r) {
                         setStatus(tr("The turns could not be read: %1").arg(r.error().message),
                                   true);
                         return;
                     }
                     m_runRecords = r.value();
                     m_runs->clear();
                     for (const AgentRunRecord &run : std::as_const(m_runRecords))
                         m_runs->addItem(runTitle(run), run.runId);
                     if (m_runRecords.isEmpty()) {
                         setStatus(
                             tr("No turn yet: what the agent changes in /workspace shows here."));
                         return;
                     }
                     // The newest turn (it just ended), unless one is being looked at and still there.
                     const QString newest = m_runRecords.first().runId;
                     showRun(newest);
                 });
}

QString AgentChangesView::currentRunId() const
{
    return m_changes.runId;
}

void AgentChangesView::showRun(const QString &runId)
{
    const int i = m_runs->findData(runId);
    if (i >= 0)
        m_runs->setCurrentIndex(i);
    setStatus(tr("Reading the turn's changes…"));
    m_call = m_client->agents().runChanges(
        m_sandboxId, runId, this, [this, runId](Result<AgentRunChanges> r) {
            m_files->clear();
            m_diff->setDiff({});
            m_reverted.clear();
            if (!r) {
                m_changes = {};
                m_changes.runId = runId;
                setStatus(tr("This turn's changes are not known: %1").arg(r.error().message), true);
                m_commit->hide();
                m_git->clear();
                Q_EMIT changesLoaded();
                return;
            }
            m_changes = r.value();
            for (const AgentFileChange &f : std::as_const(m_changes.files)) {
                QString line = kindMark(f.kind) + u' '
                               + f.path.mid(QStringLiteral("/workspace/").size());
                if (f.added || f.removed)
                    line += QStringLiteral("  +%1 −%2").arg(f.added).arg(f.removed);
                auto *item = new QListWidgetItem(line, m_files);
                item->setToolTip(f.path);
                item->setForeground(fileColor(f.kind, palette()));
            }
            const bool git = !m_changes.gitRoot.isEmpty();
            m_git->setText(git ? tr("git: %1").arg(m_changes.gitBranch.isEmpty()
                                                       ? tr("detached at %1").arg(m_changes.gitHead)
                                                       : m_changes.gitBranch)
                               : QString());
            m_git->setToolTip(m_changes.gitRoot);
            m_commit->setVisible(git);
            m_commit->setEnabled(git && !m_changes.files.isEmpty());
            if (!m_changes.done)
                setStatus(tr("The turn is still running: its changes show when it ends."));
            else if (m_changes.files.isEmpty())
                setStatus(tr("This turn changed no file in /workspace."));
            else if (!m_changes.truncated.isEmpty())
                setStatus(tr("%n file(s) changed. The workspace is larger than the review records "
                             "(%1): changes beyond that are not listed.",
                             nullptr, int(m_changes.files.size()))
                              .arg(m_changes.truncated));
            else
                setStatus(tr("%n file(s) changed.", nullptr, int(m_changes.files.size())));
            if (!m_changes.files.isEmpty())
                m_files->setCurrentRow(0);
            else
                showFile(-1);
            Q_EMIT changesLoaded();
        });
}

void AgentChangesView::showFile(int row)
{
    if (row < 0 || row >= m_changes.files.size()) {
        m_diff->setDiff({});
        m_revert->setEnabled(false);
        return;
    }
    const AgentFileChange &f = m_changes.files[row];
    if (!f.diff.isEmpty()) {
        m_diff->setDiff(f.diff);
    } else {
        const QString why = f.link ? tr("a symbolic link changed")
                            : f.diffOmitted == QLatin1String("binary")
                                ? tr("a binary file: no line diff")
                            : f.diffOmitted == QLatin1String("large")
                                ? tr("too large to show (%1 → %2)")
                                      .arg(Style::formatSize(f.sizeBefore.value_or(0)),
                                           Style::formatSize(f.sizeAfter.value_or(0)))
                                : tr("not shown: %1").arg(f.diffOmitted);
        m_diff->setDiff(QStringLiteral("@@ %1 @@").arg(why));
    }
    m_revert->setEnabled(f.revertible && !m_reverted.contains(f.path));
    QHeaderView *h = m_diffView->horizontalHeader();
    const int numberWidth = m_diffView->fontMetrics().horizontalAdvance(QStringLiteral("● 00000"));
    if (m_diff->layout() == DiffModel::Layout::Unified) {
        h->setSectionResizeMode(DiffModel::UnifiedOld, QHeaderView::Fixed);
        h->setSectionResizeMode(DiffModel::UnifiedNew, QHeaderView::Fixed);
        h->resizeSection(DiffModel::UnifiedOld, numberWidth);
        h->resizeSection(DiffModel::UnifiedNew, numberWidth);
        h->setSectionResizeMode(DiffModel::UnifiedText, QHeaderView::Stretch);
    } else {
        for (int c : {DiffModel::OldNumber, DiffModel::NewNumber}) {
            h->setSectionResizeMode(c, QHeaderView::Fixed);
            h->resizeSection(c, numberWidth);
        }
        h->setSectionResizeMode(DiffModel::OldText, QHeaderView::Stretch);
        h->setSectionResizeMode(DiffModel::NewText, QHeaderView::Stretch);
    }
    updateComments();
}

bool AgentChangesView::addComment(const QString &text)
{
    const int row = m_files->currentRow();
    const QModelIndex at = m_diffView->currentIndex();
    bool isNew = true;
    const std::optional<int> line = m_diff->lineAt(at, &isNew);
    if (text.trimmed().isEmpty() || row < 0 || row >= m_changes.files.size() || !line) {
        setStatus(tr("Select a line of the diff to comment on."), true);
        return false;
    }
    m_comments.append(
        {m_changes.files[row].path, *line, isNew, m_diff->textAt(at).trimmed(), text.trimmed()});
    updateComments();
    return true;
}

void AgentChangesView::updateComments()
{
    m_commentList->clear();
    QSet<int> newLines, oldLines;
    const int row = m_files->currentRow();
    const QString path = row >= 0 && row < m_changes.files.size() ? m_changes.files[row].path
                                                                  : QString();
    for (const Comment &c : std::as_const(m_comments)) {
        m_commentList->addItem(QStringLiteral("%1:%2%3 — %4")
                                   .arg(c.path)
                                   .arg(c.line)
                                   .arg(c.afterTurn ? QString() : tr(" (before the turn)"), c.text));
        if (c.path == path)
            (c.afterTurn ? newLines : oldLines).insert(c.line);
    }
    m_commentList->setVisible(!m_comments.isEmpty());
    m_diff->setCommentedLines(newLines, oldLines);
    Q_EMIT commentsChanged(int(m_comments.size()));
}

QString AgentChangesView::takeCommentsForPrompt()
{
    if (m_comments.isEmpty())
        return {};
    QString out = tr("Review comments on your last changes:") + u'\n';
    // (runTitle() knows this heading: the picker names such a turn by the text below it.)
    for (const Comment &c : std::as_const(m_comments)) {
        out += QStringLiteral("- %1:%2%3 (`%4`): %5\n")
                   .arg(c.path)
                   .arg(c.line)
                   .arg(c.afterTurn ? QString() : tr(" before your change"), c.lineText, c.text);
    }
    m_comments.clear();
    updateComments();
    return out;
}

bool AgentChangesView::revertSelected()
{
    const int row = m_files->currentRow();
    if (row < 0 || row >= m_changes.files.size() || !m_changes.files[row].revertible)
        return false;
    const QString path = m_changes.files[row].path;
    m_revert->setEnabled(false);
    setStatus(tr("Reverting %1…").arg(path));
    m_action = m_client->agents().revertFile(
        m_sandboxId, m_changes.runId, path, this, [this, path, row](Result<QString> r) {
            if (!r) {
                setStatus(tr("%1 was not reverted: %2").arg(path, r.error().message), true);
                m_revert->setEnabled(true);
                return;
            }
            m_reverted.insert(path);
            if (QListWidgetItem *item = m_files->item(row)) {
                QFont f = item->font();
                f.setStrikeOut(true);
                item->setFont(f);
            }
            setStatus(r.value() == QLatin1String("deleted")
                          ? tr("%1 is deleted: the turn had made it.").arg(path)
                          : tr("%1 is back as it was before the turn.").arg(path));
            Q_EMIT reverted(path);
        });
    return true;
}

bool AgentChangesView::commitTurn()
{
    if (m_changes.gitRoot.isEmpty() || m_changes.files.isEmpty())
        return false;
    QStringList paths;
    for (const AgentFileChange &f : std::as_const(m_changes.files)) {
        if (!m_reverted.contains(f.path))
            paths.append(shellQuote(f.path));
    }
    QString message;
    for (const AgentRunRecord &run : std::as_const(m_runRecords)) {
        if (run.runId == m_changes.runId)
            message = run.prompt.section(u'\n', 0, 0).simplified().left(72);
    }
    if (message.isEmpty())
        message = tr("The agent's turn %1").arg(m_changes.runId);
    // Deleted files are staged too (add -A on the paths); an author is set only where git has
    // none configured.
    const QString script
        = QStringLiteral(
              "git config user.email >/dev/null || export GIT_AUTHOR_NAME='Sandbox agent' "
              "GIT_AUTHOR_EMAIL=agent@sandbox.invalid GIT_COMMITTER_NAME='Sandbox agent' "
              "GIT_COMMITTER_EMAIL=agent@sandbox.invalid; "
              "git add -A -- %1 && git commit -q -m %2 -- %1 && git log -1 --oneline")
              .arg(paths.join(u' '), shellQuote(message));
    ExecOptions options;
    options.cwd = m_changes.gitRoot;
    options.timeoutMs = 60000;
    m_commit->setEnabled(false);
    setStatus(tr("Committing…"));
    m_action = m_client->agents()
                   .exec(m_sandboxId, Command(script), options, this, [this](Result<ExecResult> r) {
                       m_commit->setEnabled(true);
                       if (!r) {
                           setStatus(tr("Not committed: %1").arg(r.error().message), true);
                           Q_EMIT committed(false, r.error().message);
                           return;
                       }
                       const bool ok = r->exitCode == 0;
                       const QString out
                           = QString::fromUtf8(ok ? r->standardOutput : r->standardError).trimmed();
                       setStatus(ok ? tr("Committed: %1").arg(out)
                                    : tr("Not committed: %1").arg(out),
                                 !ok);
                       Q_EMIT committed(ok, out);
                   });
    return true;
}

void AgentChangesView::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() != QEvent::PaletteChange)
        return;
    m_diff->setPalette(palette());
    for (int i = 0; i < m_files->count() && i < m_changes.files.size(); ++i)
        m_files->item(i)->setForeground(fileColor(m_changes.files[i].kind, palette()));
}

} // namespace Sandbox::Ui
