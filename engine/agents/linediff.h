#pragma once

#include <QByteArray>
#include <QList>

#include <optional>

namespace Sandbox::Engine {

// A unified diff of two texts, line by line (Myers' O(ND) algorithm), in the format of
// `diff -u` with 3 lines of context and `--- a/PATH` / `+++ b/PATH` headers. Bounded: texts of
// more than `maxLines` lines, or whose shortest edit needs more than `maxEdits` changed lines,
// answer nullopt (the caller says "too large to show") instead of taking quadratic time.
class LineDiff final
{
public:
    struct Limits
    {
        qsizetype maxLines = 50000;
        qsizetype maxEdits = 2000; // the search keeps O(maxEdits²) integers
        int context = 3;
    };
    struct Result
    {
        QByteArray text; // the unified diff ("" when the texts are equal)
        int added = 0;
        int removed = 0;
    };

    static std::optional<Result> unified(const QByteArray &before, const QByteArray &after,
                                         const QByteArray &path, Limits limits);
    static std::optional<Result> unified(const QByteArray &before, const QByteArray &after,
                                         const QByteArray &path)
    {
        return unified(before, after, path, Limits{});
    }
};

} // namespace Sandbox::Engine
