#include "linediff.h"

#include <QHash>

#include <algorithm>
#include <vector>

namespace Sandbox::Engine {

namespace {

// The text's lines, each with its newline; a last line without one is marked for the
// "\ No newline at end of file" of diff -u.
QList<QByteArray> splitLines(const QByteArray &text)
{
    QList<QByteArray> lines;
    qsizetype start = 0;
    while (start < text.size()) {
        const qsizetype nl = text.indexOf('\n', start);
        const qsizetype end = nl < 0 ? text.size() : nl + 1;
        lines.append(text.mid(start, end - start));
        start = end;
    }
    return lines;
}

enum class Op : char { Same, Del, Add };

QByteArray range(qsizetype start, qsizetype count)
{
    // diff -u: "l,s" with l the first line (1-based), or the line before an empty range.
    const qsizetype first = count == 0 ? start : start + 1;
    return count == 1 ? QByteArray::number(first)
                      : QByteArray::number(first) + ',' + QByteArray::number(count);
}

} // namespace

std::optional<LineDiff::Result> LineDiff::unified(const QByteArray &before, const QByteArray &after,
                                                  const QByteArray &path, Limits limits)
{
    const QList<QByteArray> a = splitLines(before);
    const QList<QByteArray> b = splitLines(after);
    if (a.size() > limits.maxLines || b.size() > limits.maxLines)
        return std::nullopt;
    // Lines as numbers: equal lines, equal numbers.
    QHash<QByteArray, int> ids;
    std::vector<int> x, y;
    x.reserve(size_t(a.size()));
    y.reserve(size_t(b.size()));
    const auto idOf = [&ids](const QByteArray &line) {
        auto it = ids.constFind(line);
        if (it == ids.constEnd())
            it = ids.insert(line, int(ids.size()));
        return it.value();
    };
    for (const QByteArray &l : a)
        x.push_back(idOf(l));
    for (const QByteArray &l : b)
        y.push_back(idOf(l));

    // The common head and tail need no search.
    qsizetype head = 0;
    while (head < qsizetype(x.size()) && head < qsizetype(y.size()) && x[head] == y[head])
        ++head;
    qsizetype tail = 0;
    while (tail < qsizetype(x.size()) - head && tail < qsizetype(y.size()) - head
           && x[x.size() - 1 - tail] == y[y.size() - 1 - tail])
        ++tail;
    const int n = int(x.size() - head - tail);
    const int m = int(y.size() - head - tail);
    const int *xs = x.data() + head;
    const int *ys = y.data() + head;

    // Myers: V per edit distance d, kept to trace the path back.
    std::vector<Op> middle;
    if (n + m > 0) {
        const int max = n + m;
        const int offset = max + 1;
        std::vector<int> v(size_t(2 * max + 3), 0);
        std::vector<std::vector<int>> trace;
        int found = -1;
        for (int d = 0; d <= max; ++d) {
            if (d > limits.maxEdits)
                return std::nullopt;
            trace.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
            for (int k = -d; k <= d; k += 2) {
                int i = (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1]))
                            ? v[offset + k + 1]
                            : v[offset + k - 1] + 1;
                int j = i - k;
                while (i < n && j < m && xs[i] == ys[j]) {
                    ++i;
                    ++j;
                }
                v[offset + k] = i;
                if (i >= n && j >= m) {
                    found = d;
                    break;
                }
            }
            if (found >= 0)
                break;
        }
        // Back from (n, m): each d's snapshot holds V[-d-1 .. d+1] as it was before step d.
        int i = n, j = m;
        for (int d = found; d > 0; --d) {
            const std::vector<int> &pv = trace[size_t(d)];
            const auto at = [&pv, d](int k) { return pv[size_t(k + d + 1)]; };
            const int k = i - j;
            const bool down = (k == -d || (k != d && at(k - 1) < at(k + 1)));
            const int pk = down ? k + 1 : k - 1;
            const int pi = at(pk);
            const int pj = pi - pk;
            while (i > pi + (down ? 0 : 1) && j > pj + (down ? 1 : 0)) {
                middle.push_back(Op::Same);
                --i;
                --j;
            }
            middle.push_back(down ? Op::Add : Op::Del);
            i = pi;
            j = pj;
        }
        while (i > 0 && j > 0) {
            middle.push_back(Op::Same);
            --i;
            --j;
        }
        std::reverse(middle.begin(), middle.end());
    }

    std::vector<Op> ops(size_t(head), Op::Same);
    ops.insert(ops.end(), middle.begin(), middle.end());
    ops.insert(ops.end(), size_t(tail), Op::Same);

    Result out;
    const auto writeLine = [&out, &a, &b](Op op, qsizetype ai, qsizetype bi) {
        const QByteArray &line = op == Op::Add ? b[bi] : a[ai];
        out.text += op == Op::Same ? ' ' : op == Op::Add ? '+' : '-';
        out.text += line;
        if (!line.endsWith('\n'))
            out.text += "\n\\ No newline at end of file\n";
    };
    // Hunks: runs of changes with `context` lines around them, merged when they touch.
    const qsizetype total = qsizetype(ops.size());
    std::vector<qsizetype> aAt(size_t(total) + 1), bAt(size_t(total) + 1);
    for (qsizetype p = 0, ai = 0, bi = 0; p <= total; ++p) {
        aAt[size_t(p)] = ai;
        bAt[size_t(p)] = bi;
        if (p < total) {
            ai += ops[size_t(p)] != Op::Add;
            bi += ops[size_t(p)] != Op::Del;
        }
    }
    qsizetype p = 0;
    while (p < total) {
        while (p < total && ops[size_t(p)] == Op::Same)
            ++p;
        if (p == total)
            break;
        const qsizetype start = std::max<qsizetype>(0, p - limits.context);
        qsizetype end = p;
        qsizetype sameRun = 0;
        while (end < total) {
            sameRun = ops[size_t(end)] == Op::Same ? sameRun + 1 : 0;
            ++end;
            if (sameRun > 2 * limits.context)
                break;
        }
        end = std::min(total, end - sameRun + limits.context);
        if (out.text.isEmpty())
            out.text = "--- a/" + path + "\n+++ b/" + path + "\n";
        out.text += "@@ -" + range(aAt[size_t(start)], aAt[size_t(end)] - aAt[size_t(start)]) + " +"
                    + range(bAt[size_t(start)], bAt[size_t(end)] - bAt[size_t(start)]) + " @@\n";
        for (qsizetype q = start; q < end; ++q) {
            const Op op = ops[size_t(q)];
            writeLine(op, aAt[size_t(q)], bAt[size_t(q)]);
            out.added += op == Op::Add;
            out.removed += op == Op::Del;
        }
        p = end;
    }
    return out;
}

} // namespace Sandbox::Engine
