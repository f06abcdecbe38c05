#include "utf8.h"

#include <cstring>

namespace Sandbox::Utf8 {

namespace {

int sequenceLength(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead >= 0xc2 && lead <= 0xdf)
        return 2;
    if (lead >= 0xe0 && lead <= 0xef)
        return 3;
    if (lead >= 0xf0 && lead <= 0xf4)
        return 4;
    return 0; // continuation byte or never valid
}

} // namespace

qsizetype completePrefixLength(QByteArrayView bytes)
{
    const qsizetype n = bytes.size();
    // Look back at most 3 bytes for the lead byte of a trailing, unfinished sequence.
    for (qsizetype back = 1; back <= 3 && back <= n; ++back) {
        const auto c = static_cast<unsigned char>(bytes[n - back]);
        if ((c & 0xc0) == 0x80)
            continue; // continuation byte: keep looking for its lead
        const int len = sequenceLength(c);
        if (len > back)
            return n - back; // the sequence needs more bytes than we have
        return n;
    }
    return n;
}

bool isValid(QByteArrayView bytes)
{
    const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
    const qsizetype n = bytes.size();
    qsizetype i = 0;
    while (i < n) {
        // Fast path over ASCII, eight bytes at a time.
        while (i + 8 <= n) {
            quint64 word;
            memcpy(&word, p + i, 8);
            if (word & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        const unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        const int len = sequenceLength(c);
        if (len == 0 || i + len > n)
            return false;
        const unsigned char c1 = p[i + 1];
        if ((c1 & 0xc0) != 0x80)
            return false;
        if (len >= 3) {
            if (c == 0xe0 && c1 < 0xa0)
                return false; // overlong
            if (c == 0xed && c1 > 0x9f)
                return false; // surrogate
            if (c == 0xf0 && c1 < 0x90)
                return false; // overlong
            if (c == 0xf4 && c1 > 0x8f)
                return false; // above U+10FFFF
            if ((p[i + 2] & 0xc0) != 0x80)
                return false;
        }
        if (len == 4 && (p[i + 3] & 0xc0) != 0x80)
            return false;
        i += len;
    }
    return true;
}

} // namespace Sandbox::Utf8
