#include "sqlsplitter.h"

namespace Sandbox::Ui {

QList<SqlStatementRange> splitSql(const QString &s)
{
    QList<SqlStatementRange> out;
    const int n = int(s.size());
    int start = 0;
    int i = 0;
    auto flush = [&](int end) {
        int a = start, b = end;
        while (a < b && s[a].isSpace())
            ++a;
        while (b > a && s[b - 1].isSpace())
            --b;
        // A piece of only comments is not a statement.
        QString text = s.mid(a, b - a);
        bool onlyComments = true;
        for (int k = 0; k < text.size() && onlyComments;) {
            if (text[k].isSpace()) {
                ++k;
            } else if (text.mid(k, 2) == QLatin1String("--")) {
                const int nl = int(text.indexOf(u'\n', k));
                k = nl < 0 ? int(text.size()) : nl + 1;
            } else if (text.mid(k, 2) == QLatin1String("/*")) {
                const int close = int(text.indexOf(QLatin1String("*/"), k + 2));
                k = close < 0 ? int(text.size()) : close + 2;
            } else {
                onlyComments = false;
            }
        }
        if (!text.isEmpty() && !onlyComments)
            out.append({text, a, b});
        start = end + 1;
    };
    while (i < n) {
        const QChar c = s[i];
        if (c == u'\'' || c == u'"' || c == u'`') {
            // Quoted: doubled quotes stay inside; in E'...' a backslash escapes too.
            const bool escapes = c == u'\'' && i > 0 && (s[i - 1] == u'E' || s[i - 1] == u'e');
            ++i;
            while (i < n) {
                if (escapes && s[i] == u'\\') {
                    i += 2;
                    continue;
                }
                if (s[i] == c) {
                    if (i + 1 < n && s[i + 1] == c) {
                        i += 2;
                        continue;
                    }
                    break;
                }
                ++i;
            }
            ++i;
        } else if (c == u'-' && i + 1 < n && s[i + 1] == u'-') {
            while (i < n && s[i] != u'\n')
                ++i;
        } else if (c == u'/' && i + 1 < n && s[i + 1] == u'*') {
            int depth = 1;
            i += 2;
            while (i < n && depth > 0) {
                if (s[i] == u'/' && i + 1 < n && s[i + 1] == u'*') {
                    ++depth;
                    i += 2;
                } else if (s[i] == u'*' && i + 1 < n && s[i + 1] == u'/') {
                    --depth;
                    i += 2;
                } else {
                    ++i;
                }
            }
        } else if (c == u'$') {
            // $tag$ ... $tag$ (PostgreSQL); a lone $1 parameter is not a quote.
            int j = i + 1;
            while (j < n && (s[j].isLetterOrNumber() || s[j] == u'_'))
                ++j;
            const bool isTag = j < n && s[j] == u'$' && !(j > i + 1 && s[i + 1].isDigit());
            if (isTag) {
                const QString tag = s.mid(i, j - i + 1);
                const int close = int(s.indexOf(tag, j + 1));
                i = close < 0 ? n : close + int(tag.size());
            } else {
                i = j;
            }
        } else if (c == u';') {
            flush(i);
            ++i;
        } else {
            ++i;
        }
    }
    flush(n);
    return out;
}

int statementAt(const QList<SqlStatementRange> &statements, int offset)
{
    int best = -1;
    for (int i = 0; i < statements.size(); ++i) {
        if (statements[i].start <= offset)
            best = i;
        if (offset <= statements[i].end + 1 && offset >= statements[i].start)
            return i;
    }
    if (best < 0 && !statements.isEmpty())
        best = 0;
    return best;
}

int utf16Offset(const QString &text, int codePointPosition)
{
    int units = 0;
    for (int cp = 1; cp < codePointPosition && units < text.size(); ++cp)
        units += (text[units].isHighSurrogate() && units + 1 < text.size()) ? 2 : 1;
    return units;
}

} // namespace Sandbox::Ui
