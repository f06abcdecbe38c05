#pragma once

#include "api/methods.h"

#include <QJsonObject>

namespace Sandbox::Engine {

class CallDeadlines;
class DatabaseHost;

// databases.exportData: CSV or JSON paged through by the engine (within a bound), or a file the
// server writes itself (parquet, or any format to a path) where its dialect can.
void exportTable(DatabaseHost *host, CallDeadlines *deadlines, const QJsonObject &params,
                 const CallContext &ctx, const Methods::Reply &reply);

// One CSV cell (RFC 4180): null is empty; {$int|$float|$bytes} their text; objects and arrays
// as compact JSON; quoted when it holds , " CR or LF.
QString csvCell(const QJsonValue &value);

} // namespace Sandbox::Engine
