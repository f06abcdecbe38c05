#include "pagetext.h"

namespace Sandbox::PageText {

namespace {

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

qsizetype skipSpace(QByteArrayView t, qsizetype i)
{
    while (i < t.size() && isSpace(t[i]))
        ++i;
    return i;
}

// The end of the string that starts at `i` (its opening quote): one past its closing quote.
qsizetype skipString(QByteArrayView t, qsizetype i)
{
    for (++i; i < t.size(); ++i) {
        if (t[i] == '\\')
            ++i;
        else if (t[i] == '"')
            return i + 1;
    }
    return -1;
}

// The end of the value that starts at `i`; for an array, `elements` counts its elements and
// `allArrays` says whether each is an array.
qsizetype skipValue(QByteArrayView t, qsizetype i, qsizetype *elements = nullptr,
                    bool *allArrays = nullptr)
{
    if (i >= t.size())
        return -1;
    if (t[i] == '"')
        return skipString(t, i);
    if (t[i] != '[' && t[i] != '{') {
        while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !isSpace(t[i]))
            ++i;
        return i;
    }
    const bool top = t[i] == '[';
    int depth = 0;
    bool expectElement = true;
    for (; i < t.size(); ++i) {
        const char c = t[i];
        if (c == '"') {
            if (depth == 1 && top && expectElement && elements) {
                ++*elements;
                *allArrays = false;
            }
            expectElement = false;
            i = skipString(t, i) - 1;
            if (i < 0)
                return -1;
        } else if (c == '[' || c == '{') {
            if (depth == 1 && top && expectElement && elements) {
                ++*elements;
                *allArrays = *allArrays && c == '[';
            }
            ++depth;
            expectElement = depth == 1; // the outer array's first element comes next
        } else if (c == ']' || c == '}') {
            if (--depth == 0)
                return i + 1;
        } else if (c == ',') {
            expectElement = depth == 1;
        } else if (!isSpace(c) && depth == 1 && top && expectElement && elements) {
            ++*elements; // a scalar element
            *allArrays = false;
            expectElement = false;
        }
    }
    return -1;
}

// Splits `t` at its member `key`; `arrays` asks for the element count of an array value (and
// refuses one whose elements are not all arrays).
std::optional<Split> splitAt(QByteArrayView t, QByteArrayView key, bool arrays)
{
    qsizetype i = skipSpace(t, 0);
    if (i >= t.size() || t[i] != '{')
        return std::nullopt;
    Split out;
    out.members = "{";
    bool found = false;
    i = skipSpace(t, i + 1);
    while (i < t.size() && t[i] != '}') {
        const qsizetype keyEnd = skipString(t, i);
        if (keyEnd < 0)
            return std::nullopt;
        const QByteArrayView name = t.sliced(i, keyEnd - i);
        const qsizetype colon = skipSpace(t, keyEnd);
        const qsizetype valueStart = skipSpace(t, colon + 1);
        qsizetype count = 0;
        bool allArrays = true;
        const bool isKey = name == key && !found;
        const qsizetype valueEnd = isKey && arrays ? skipValue(t, valueStart, &count, &allArrays)
                                                   : skipValue(t, valueStart);
        if (valueEnd < 0)
            return std::nullopt;
        if (isKey) {
            if (arrays && (t[valueStart] != '[' || !allArrays))
                return std::nullopt;
            out.rows = t.sliced(valueStart, valueEnd - valueStart).toByteArray();
            out.rowCount = count;
            found = true;
        } else {
            if (out.members.size() > 1)
                out.members += ',';
            out.members += t.sliced(i, valueEnd - i);
        }
        i = skipSpace(t, valueEnd);
        if (i < t.size() && t[i] == ',')
            i = skipSpace(t, i + 1);
    }
    out.members += '}';
    if (!found)
        return std::nullopt;
    return out;
}

} // namespace

std::optional<Split> splitMember(QByteArrayView object, QByteArrayView key)
{
    return splitAt(object, key, false);
}

std::optional<Split> split(QByteArrayView object)
{
    return splitAt(object, "\"rows\"", true);
}

} // namespace Sandbox::PageText
