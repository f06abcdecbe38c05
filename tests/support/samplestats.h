#pragma once

// The median and percentiles of a benchmark's samples (header-only, for suites that link no
// engine). An empty list gives 0.

#include <QtCore/QList>

#include <algorithm>

namespace SampleStats {

inline double percentile(QList<double> v, double p)
{
    std::sort(v.begin(), v.end());
    return v.isEmpty() ? 0 : v[qMin<qsizetype>(v.size() - 1, qsizetype(v.size() * p))];
}

inline double median(QList<double> v)
{
    return percentile(std::move(v), 0.5);
}

} // namespace SampleStats
