#include "editorpage.h"

#include "codeeditor.h"
#include "codeeditorview.h"
#include "findbar.h"
#include "lexerfactory.h"

#include "../common/uistyle.h"

#include <client/client.h>
#include <protocol/sandboxenums.h>

#include <Qsci/qscilexer.h>
#include <Qsci/qsciscintilla.h>

#include <QAction>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLoggingCategory>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStringDecoder>
#include <QVBoxLayout>

#ifdef SANDBOX_HAVE_KSYNTAXHIGHLIGHTING
#include <KSyntaxHighlighting/Definition>
#include <KSyntaxHighlighting/Repository>
#include <KSyntaxHighlighting/SyntaxHighlighter>
#include <KSyntaxHighlighting/Theme>
#endif

Q_LOGGING_CATEGORY(lcEditor, "sandbox.ui.editor", QtInfoMsg)

namespace Sandbox::Ui {

EditorPage::EditorPage(const SandboxPageContext &context, const QString &path, QWidget *parent)
    : SandboxPage(context, parent)
    , m_path(path)
    , m_stack(new QStackedWidget(this))
    , m_textPage(new QWidget(this))
    , m_editor(new CodeEditor(m_textPage))
    , m_editorView(new CodeEditorView(m_editor, m_textPage))
    , m_banner(new QWidget(m_textPage))
    , m_bannerText(new QLabel(m_banner))
    , m_infoPage(new QWidget(this))
    , m_infoLabel(new QLabel(m_infoPage))
    , m_preview(new QPlainTextEdit(m_infoPage))
    , m_retryButton(new QPushButton(tr("Try Again"), m_infoPage))
    , m_loadingLabel(new QLabel(tr("Loading…"), this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_stack);

    // The text page: banner, editor, find bar.
    auto *textLayout = new QVBoxLayout(m_textPage);
    textLayout->setContentsMargins(0, 0, 0, 0);
    textLayout->setSpacing(0);
    m_banner->setAutoFillBackground(true);
    Style::setBackgroundTone(m_banner, Style::Tone::Warning);
    auto *bannerRow = new QHBoxLayout(m_banner);
    bannerRow->setContentsMargins(8, 4, 8, 4);
    m_bannerText->setWordWrap(true);
    m_bannerText->setTextFormat(Qt::PlainText);
    bannerRow->addWidget(m_bannerText, 1);
    auto *reloadButton = new QPushButton(tr("Reload"), m_banner);
    auto *keepButton = new QPushButton(tr("Keep My Version"), m_banner);
    bannerRow->addWidget(reloadButton);
    bannerRow->addWidget(keepButton);
    m_banner->hide();
    textLayout->addWidget(m_banner);
    textLayout->addWidget(m_editorView, 1);
    connect(reloadButton, &QPushButton::clicked, this, [this] {
        if (isModified()
            && QMessageBox::question(this, tr("Reload"),
                                     tr("Discard your unsaved changes to %1?").arg(m_path))
                   != QMessageBox::Yes)
            return;
        hideBanner();
        reload();
    });
    connect(keepButton, &QPushButton::clicked, this, [this] {
        // The next save overwrites the sandbox's version without asking again.
        hideBanner();
    });

    // The info page: binary, too large, or failed.
    auto *infoLayout = new QVBoxLayout(m_infoPage);
    m_infoLabel->setWordWrap(true);
    m_infoLabel->setTextFormat(Qt::PlainText);
    infoLayout->addWidget(m_infoLabel);
    auto *buttons = new QHBoxLayout;
    auto *downloadButton = new QPushButton(tr("Download…"), m_infoPage);
    buttons->addWidget(downloadButton);
    buttons->addWidget(m_retryButton);
    buttons->addStretch(1);
    infoLayout->addLayout(buttons);
    m_preview->setReadOnly(true);
    m_preview->setFont(Style::monospaceFont());
    m_preview->setLineWrapMode(QPlainTextEdit::NoWrap);
    infoLayout->addWidget(m_preview, 1);
    connect(downloadButton, &QPushButton::clicked, this, &EditorPage::download);
    connect(m_retryButton, &QPushButton::clicked, this, &EditorPage::reload);

    m_loadingLabel->setAlignment(Qt::AlignCenter);
    m_stack->addWidget(m_loadingLabel);
    m_stack->addWidget(m_textPage);
    m_stack->addWidget(m_infoPage);

    // The editor itself (fonts, margins, find bar: CodeEditor and CodeEditorView).
    m_editor->setFolding(QsciScintilla::BoxedTreeFoldStyle, 2);
    m_editor->setFrameShape(QFrame::NoFrame);
    connect(m_editor, &QsciScintilla::modificationChanged, this, &EditorPage::updateTitle);

    auto *saveAction = new QAction(tr("Save"), this);
    saveAction->setShortcut(QKeySequence::Save);
    saveAction->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(saveAction, &QAction::triggered, this, [this] { save(); });
    QWidget::addAction(saveAction);

    m_checkTimer.setInterval(CheckIntervalMs);
    connect(&m_checkTimer, &QTimer::timeout, this, [this] {
        if (isVisible())
            checkForChanges();
    });

    m_conflictHandler = [this](const FileEntry &current) { return askConflict(current); };
    setFocusProxy(m_editor);
    // A sleeping sandbox's file (a restored tab in the background) is read when it is first
    // shown: reading it would wake the sandbox.
    if (fromWire<SandboxStatus>(sandbox().status) == SandboxStatus::Sleeping)
        m_loadOnShow = true;
    else
        load();
}

EditorPage::~EditorPage() = default;

void EditorPage::showEvent(QShowEvent *event)
{
    SandboxPage::showEvent(event);
    if (m_loadOnShow) {
        m_loadOnShow = false;
        load();
    }
}

QString EditorPage::title() const
{
    const QString name = QFileInfo(m_path).fileName();
    return isModified() ? name + u'*' : name;
}

QString EditorPage::toolTip() const
{
    return m_path;
}

bool EditorPage::isModified() const
{
    return m_state == State::Text && m_editor->isModified();
}

bool EditorPage::isChangeBannerVisible() const
{
    return !m_banner->isHidden();
}

QString EditorPage::infoText() const
{
    return m_infoLabel->text();
}

void EditorPage::setConflictHandler(std::function<ConflictChoice(const FileEntry &)> handler)
{
    m_conflictHandler = std::move(handler);
}

FindBar *EditorPage::findBar() const
{
    return m_editorView->findBar();
}

void EditorPage::setState(State state)
{
    m_state = state;
    m_editorView->setFindEnabled(state == State::Text);
    switch (state) {
    case State::Loading:
        m_stack->setCurrentWidget(m_loadingLabel);
        break;
    case State::Text:
        m_stack->setCurrentWidget(m_textPage);
        break;
    default:
        m_stack->setCurrentWidget(m_infoPage);
        break;
    }
    if (state == State::Text)
        m_checkTimer.start();
    else
        m_checkTimer.stop();
    updateTitle();
    Q_EMIT stateChanged(state);
}

void EditorPage::reload()
{
    m_pendingPosition = saveState();
    load();
}

void EditorPage::load()
{
    if (!client())
        return;
    setState(State::Loading);
    m_call = client()->sandboxes().stat(sandbox().id, m_path, this, [this](Result<FileEntry> r) {
        if (!r) {
            showInfo(tr("Cannot open %1: %2").arg(m_path, r.error().message), {}, true);
            setState(State::Failed);
            return;
        }
        if (r->type == FileEntry::Type::Directory) {
            showInfo(tr("%1 is a folder.").arg(m_path), {}, false);
            setState(State::Failed);
            return;
        }
        m_base = r.value();
        m_acknowledgedMtime = {};
        ReadFileOptions options;
        const bool tooLarge = m_base.size > MaxEditableBytes;
        if (tooLarge)
            options.length = PreviewBytes;
        m_call = client()->sandboxes().readFile(
            sandbox().id, m_path, options, this, [this, tooLarge](Result<FileContent> c) {
                if (!c) {
                    showInfo(tr("Cannot read %1: %2").arg(m_path, c.error().message), {}, true);
                    setState(State::Failed);
                    return;
                }
                if (tooLarge) {
                    showInfo(tr("%1 is %2: too large to edit here (the limit is %3). The first %4 "
                                "are shown, read-only.")
                                 .arg(m_path, Style::formatSize(c->size),
                                      Style::formatSize(MaxEditableBytes),
                                      Style::formatSize(PreviewBytes)),
                             c->content, false);
                    setState(State::TooLarge);
                } else if (looksBinary(c->content)) {
                    showInfo(tr("%1 is a binary file (%2): it is not opened as text. The first "
                                "bytes are shown.")
                                 .arg(m_path, Style::formatSize(c->size)),
                             c->content.left(4096), false);
                    setState(State::Binary);
                } else {
                    showText(c->content);
                }
                Q_EMIT loaded();
            });
    });
}

bool EditorPage::looksBinary(const QByteArray &bytes)
{
    const QByteArray probe = bytes.left(64 * 1024);
    if (probe.contains('\0'))
        return true;
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    const QString text = decoder.decode(bytes);
    return decoder.hasError();
}

QString EditorPage::hexDump(const QByteArray &bytes)
{
    QString out;
    for (qsizetype off = 0; off < bytes.size(); off += 16) {
        const QByteArray row = bytes.mid(off, 16);
        QString hex;
        QString ascii;
        for (qsizetype i = 0; i < 16; ++i) {
            if (i < row.size()) {
                const uchar c = uchar(row[i]);
                hex += QStringLiteral("%1 ").arg(c, 2, 16, QLatin1Char('0'));
                ascii += (c >= 0x20 && c < 0x7f) ? QChar(char16_t(c)) : QChar(u'.');
            } else {
                hex += QStringLiteral("   ");
            }
            if (i == 7)
                hex += u' ';
        }
        out += QStringLiteral("%1  %2 %3\n").arg(off, 8, 16, QLatin1Char('0')).arg(hex, ascii);
    }
    return out;
}

void EditorPage::showText(const QByteArray &content)
{
    const QString text = QString::fromUtf8(content);
    if (QsciLexer *old = m_editor->lexer()) {
        m_editor->setLexer(nullptr);
        old->deleteLater();
    }
    QsciLexer *lexer = LexerFactory::create(m_path, m_editor);
    m_language = LexerFactory::languageFor(m_path);
    m_editor->setLexer(lexer);
    m_editor->setEolMode(text.contains(QStringLiteral("\r\n")) ? QsciScintilla::EolWindows
                                                               : QsciScintilla::EolUnix);
    m_editor->setText(text);
    m_editor->setModified(false);
    m_editor->SendScintilla(QsciScintillaBase::SCI_EMPTYUNDOBUFFER);
    hideBanner();
    m_deleted = false;
    setState(State::Text);
    if (!m_pendingPosition.isEmpty()) {
        restoreState(m_pendingPosition);
        m_pendingPosition = {};
    }
}

void EditorPage::showInfo(const QString &text, const QByteArray &preview, bool canRetry)
{
    m_infoLabel->setText(text);
    m_retryButton->setVisible(canRetry);
    m_preview->setVisible(!preview.isEmpty());
    if (preview.isEmpty()) {
        m_preview->clear();
        return;
    }
    if (looksBinary(preview.left(preview.size() - 4))) {
        m_preview->setPlainText(hexDump(preview));
        return;
    }
    QStringDecoder decoder(QStringDecoder::Utf8);
    m_preview->setPlainText(decoder.decode(preview)); // a cut character at the end is dropped
#ifdef SANDBOX_HAVE_KSYNTAXHIGHLIGHTING
    qDeleteAll(m_preview->document()->findChildren<KSyntaxHighlighting::SyntaxHighlighter *>());
    auto repository = std::make_shared<KSyntaxHighlighting::Repository>();
    auto *highlighter = new KSyntaxHighlighting::SyntaxHighlighter(m_preview->document());
    highlighter->setTheme(repository->defaultTheme(KSyntaxHighlighting::Repository::LightTheme));
    highlighter->setDefinition(repository->definitionForFileName(m_path));
    m_highlighting = repository;
#endif
}

void EditorPage::updateTitle()
{
    Q_EMIT titleChanged();
}

bool EditorPage::differsFromBase(const FileEntry &e) const
{
    if (m_acknowledgedMtime.isValid() && e.mtime == m_acknowledgedMtime)
        return false;
    return e.mtime != m_base.mtime || e.size != m_base.size;
}

void EditorPage::save()
{
    if (m_state != State::Text || m_saving || !client())
        return;
    m_saving = true;
    // Has the file changed in the sandbox since it was loaded?
    m_call = client()->sandboxes().stat(sandbox().id, m_path, this, [this](Result<FileEntry> r) {
        if (r && differsFromBase(r.value())) {
            Q_EMIT changedInSandbox();
            switch (m_conflictHandler(r.value())) {
            case ConflictChoice::Overwrite:
                break;
            case ConflictChoice::Reload:
                m_saving = false;
                reload();
                return;
            case ConflictChoice::Cancel:
                m_saving = false;
                return;
            }
        } else if (!r && r.error().code != ErrorCode::NotFound) {
            m_saving = false;
            Q_EMIT message(tr("Cannot save %1: %2").arg(m_path, r.error().message));
            Q_EMIT saveFailed(r.error().message);
            return;
        }
        write();
    });
}

EditorPage::ConflictChoice EditorPage::askConflict(const FileEntry &current)
{
    QMessageBox box(QMessageBox::Warning, tr("File Changed in the Sandbox"),
                    tr("%1 changed in the sandbox since you opened it (now %2, modified %3).\n\n"
                       "Overwrite it with your version?")
                        .arg(m_path, Style::formatSize(current.size),
                             current.mtime.toLocalTime().toString(QStringLiteral("HH:mm:ss"))),
                    QMessageBox::NoButton, this);
    QPushButton *overwrite = box.addButton(tr("Overwrite"), QMessageBox::DestructiveRole);
    QPushButton *reloadButton = box.addButton(tr("Reload Theirs"), QMessageBox::ActionRole);
    box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(QMessageBox::Cancel);
    box.exec();
    if (box.clickedButton() == overwrite)
        return ConflictChoice::Overwrite;
    if (box.clickedButton() == reloadButton)
        return ConflictChoice::Reload;
    return ConflictChoice::Cancel;
}

void EditorPage::write()
{
    QString text = m_editor->text();
    WriteFileOptions options;
    if (m_base.mode > 0)
        options.mode = m_base.mode & 07777;
    options.parents = m_deleted;
    const QByteArray content = text.toUtf8();
    const bool wasModified = m_editor->isModified();
    m_editor->setModified(false); // edits made while saving mark it again
    m_call = client()->sandboxes().writeFile(sandbox().id, m_path, content, options, this,
                                             [this, wasModified](Result<WriteFileResult> r) {
                                                 if (!r) {
                                                     m_saving = false;
                                                     if (wasModified)
                                                         m_editor->setModified(true);
                                                     const QString msg = tr("Cannot save %1: %2")
                                                                             .arg(m_path,
                                                                                  r.error().message);
                                                     qCInfo(lcEditor) << msg;
                                                     QMessageBox::warning(this, tr("Save Failed"),
                                                                          msg);
                                                     Q_EMIT message(msg);
                                                     Q_EMIT saveFailed(r.error().message);
                                                     return;
                                                 }
                                                 afterSave();
                                             });
}

void EditorPage::afterSave()
{
    // Remember the file as written, so that our own save is not taken for someone else's.
    m_call = client()->sandboxes().stat(sandbox().id, m_path, this, [this](Result<FileEntry> r) {
        m_saving = false;
        if (r) {
            m_base = r.value();
            m_acknowledgedMtime = {};
        }
        m_deleted = false;
        hideBanner();
        updateTitle();
        Q_EMIT message(tr("Saved %1").arg(m_path));
        Q_EMIT saved();
        Q_EMIT filesTouched(); // its size in the file pane
    });
}

void EditorPage::checkForChanges()
{
    if (m_state != State::Text || m_saving || m_checking || !client() || m_deleted)
        return;
    m_checking = true;
    client()
        ->sandboxes()
        .stat(
            sandbox().id, m_path, this,
            [this](Result<FileEntry> r) {
                m_checking = false;
                if (m_saving || m_state != State::Text)
                    return;
                if (!r) {
                    if (r.error().code == ErrorCode::NotFound)
                        markDeleted();
                    return;
                }
                if (differsFromBase(r.value()) && !isChangeBannerVisible()) {
                    m_acknowledgedMtime = {};
                    showBanner(
                        isModified()
                            ? tr("%1 changed in the sandbox, and you have unsaved changes. Reload "
                                 "theirs, or keep yours (saving overwrites theirs).")
                                  .arg(m_path)
                            : tr("%1 changed in the sandbox.").arg(m_path));
                    m_pendingChange = r.value();
                    Q_EMIT changedInSandbox();
                }
            })
        .detach();
}

void EditorPage::showBanner(const QString &text)
{
    m_bannerText->setText(text);
    m_banner->show();
}

void EditorPage::hideBanner()
{
    if (m_banner->isHidden())
        return;
    m_banner->hide();
    // "Keep my version": this change is known; a later one shows the banner again.
    if (m_pendingChange.mtime.isValid())
        m_acknowledgedMtime = m_pendingChange.mtime;
    m_pendingChange = {};
}

void EditorPage::setPath(const QString &path)
{
    m_path = path;
    updateTitle();
}

void EditorPage::markDeleted()
{
    if (m_deleted)
        return;
    m_deleted = true;
    showBanner(tr("%1 was deleted in the sandbox. Saving creates it again.").arg(m_path));
}

bool EditorPage::maybeClose()
{
    if (!isModified())
        return true;
    const auto answer
        = QMessageBox::question(this, tr("Unsaved Changes"),
                                tr("%1 has unsaved changes. Close it anyway?").arg(m_path),
                                QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Cancel);
    return answer == QMessageBox::Discard;
}

QJsonObject EditorPage::saveState() const
{
    int line = 0;
    int index = 0;
    m_editor->getCursorPosition(&line, &index);
    return {{QStringLiteral("path"), m_path},
            {QStringLiteral("line"), line},
            {QStringLiteral("index"), index},
            {QStringLiteral("firstVisibleLine"), m_editor->firstVisibleLine()}};
}

void EditorPage::restoreState(const QJsonObject &state)
{
    if (m_state != State::Text) {
        m_pendingPosition = state;
        return;
    }
    const int line = state.value(QStringLiteral("line")).toInt();
    const int index = state.value(QStringLiteral("index")).toInt();
    if (line < m_editor->lines())
        m_editor->setCursorPosition(line, index);
    m_editor->setFirstVisibleLine(state.value(QStringLiteral("firstVisibleLine")).toInt());
}

void EditorPage::download()
{
    const QString target = QFileDialog::getSaveFileName(this, tr("Download %1").arg(m_path),
                                                        QStandardPaths::writableLocation(
                                                            QStandardPaths::DownloadLocation)
                                                            + u'/' + QFileInfo(m_path).fileName());
    if (target.isEmpty())
        return;
    // Files can be large: page through them like the file tree's download does.
    auto *transferState = new QObject(this);
    auto file = std::make_shared<QFile>(target);
    if (!file->open(QIODevice::WriteOnly)) {
        QMessageBox::warning(this, tr("Download"),
                             tr("Cannot write %1: %2").arg(target, file->errorString()));
        return;
    }
    auto step = std::make_shared<std::function<void(qint64)>>();
    *step = [this, file, step, transferState, target](qint64 offset) {
        ReadFileOptions options;
        options.offset = offset;
        options.length = 8LL * 1024 * 1024;
        client()
            ->sandboxes()
            .readFile(sandbox().id, m_path, options, transferState,
                      [this, file, step, transferState, target, offset](Result<FileContent> r) {
                          if (!r) {
                              file->remove();
                              transferState->deleteLater();
                              *step = nullptr; // break the cycle
                              Q_EMIT message(tr("Download failed: %1").arg(r.error().message));
                              return;
                          }
                          file->write(r->content);
                          const qint64 next = offset + r->content.size();
                          if (next < r->size && !r->content.isEmpty()) {
                              (*step)(next);
                              return;
                          }
                          file->close();
                          transferState->deleteLater();
                          *step = nullptr; // break the cycle
                          Q_EMIT message(tr("Downloaded %1 to %2").arg(m_path, target));
                      })
            .detach();
    };
    (*step)(0);
}

} // namespace Sandbox::Ui
