#include "dockerfilelexer.h"

#include <Qsci/qsciscintilla.h>

#include <QColor>
#include <QSet>

#include <cctype>

namespace Sandbox::Ui {

namespace {
bool isInstruction(const QByteArray &word)
{
    static const QSet<QByteArray> words{"FROM",        "RUN",        "CMD",     "LABEL",
                                        "MAINTAINER",  "EXPOSE",     "ENV",     "ADD",
                                        "COPY",        "ENTRYPOINT", "VOLUME",  "USER",
                                        "WORKDIR",     "ARG",        "ONBUILD", "STOPSIGNAL",
                                        "HEALTHCHECK", "SHELL",      "AS"};
    return words.contains(word.toUpper());
}
} // namespace

DockerfileLexer::DockerfileLexer(QObject *parent)
    : QsciLexerCustom(parent)
{}

const char *DockerfileLexer::language() const
{
    return "Dockerfile";
}

QString DockerfileLexer::description(int style) const
{
    switch (style) {
    case Default:
        return tr("Default");
    case Comment:
        return tr("Comment");
    case Instruction:
        return tr("Instruction");
    case String:
        return tr("String");
    case Variable:
        return tr("Variable");
    case Flag:
        return tr("Flag");
    default:
        return {};
    }
}

QColor DockerfileLexer::defaultColor(int style) const
{
    switch (style) {
    case Comment:
        return QColor(0x6a, 0x73, 0x7d);
    case Instruction:
        return QColor(0x00, 0x5c, 0xc5);
    case String:
        return QColor(0x0a, 0x7f, 0x3f);
    case Variable:
        return QColor(0x95, 0x38, 0x00);
    case Flag:
        return QColor(0x6f, 0x42, 0xc1);
    default:
        return QColor(0x1f, 0x23, 0x28);
    }
}

void DockerfileLexer::styleText(int start, int end)
{
    QsciScintilla *ed = editor();
    if (!ed || start >= end)
        return;
    // Restart at the beginning of the line so that an instruction is always seen whole.
    int line = 0;
    int index = 0;
    ed->lineIndexFromPosition(start, &line, &index);
    start = int(ed->positionFromLineIndex(line, 0));
    const QByteArray text = ed->bytes(start, end);
    startStyling(start);

    // Whether the line before `start` ended with a continuation (then there is no instruction).
    bool continuation = false;
    if (line > 0) {
        const QString prev = ed->text(line - 1).trimmed();
        continuation = prev.endsWith(u'\\') && !prev.startsWith(u'#');
    }
    int i = 0;
    const int n = int(text.size()) - (text.endsWith('\0') ? 1 : 0);
    bool atLineStart = true;
    while (i < n) {
        const char c = text[i];
        if (c == '\n' || c == '\r') {
            if (c == '\n') {
                // The next line continues this instruction only after a trailing backslash.
                int k = i - 1;
                while (k >= 0 && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r'))
                    --k;
                continuation = k >= 0 && text[k] == '\\';
                atLineStart = true;
            }
            setStyling(1, Default);
            ++i;
            continue;
        }
        if (atLineStart && (c == ' ' || c == '\t')) {
            setStyling(1, Default);
            ++i;
            continue;
        }
        if (atLineStart && c == '#') {
            int j = i;
            while (j < n && text[j] != '\n')
                ++j;
            setStyling(j - i, Comment);
            i = j;
            continue;
        }
        if (atLineStart) {
            atLineStart = false;
            int j = i;
            while (j < n && (std::isalpha(uchar(text[j])) != 0))
                ++j;
            if (!continuation && j > i && isInstruction(text.mid(i, j - i))) {
                setStyling(j - i, Instruction);
                i = j;
                continue;
            }
        }
        if (c == '"' || c == '\'') {
            int j = i + 1;
            while (j < n && text[j] != c && text[j] != '\n') {
                if (text[j] == '\\' && j + 1 < n)
                    ++j;
                ++j;
            }
            if (j < n && text[j] == c)
                ++j;
            setStyling(j - i, String);
            i = j;
            continue;
        }
        if (c == '$') {
            int j = i + 1;
            if (j < n && text[j] == '{') {
                while (j < n && text[j] != '}' && text[j] != '\n')
                    ++j;
                if (j < n && text[j] == '}')
                    ++j;
            } else {
                while (j < n && (std::isalnum(uchar(text[j])) != 0 || text[j] == '_'))
                    ++j;
            }
            setStyling(j - i, Variable);
            i = j;
            continue;
        }
        if (c == '-' && i + 1 < n && text[i + 1] == '-' && (i == 0 || text[i - 1] == ' ')) {
            int j = i + 2;
            while (j < n && text[j] != ' ' && text[j] != '\n' && text[j] != '=')
                ++j;
            setStyling(j - i, Flag);
            i = j;
            continue;
        }
        setStyling(1, Default);
        ++i;
    }
}

} // namespace Sandbox::Ui
