#pragma once

#include <QColor>
#include <QFont>
#include <QIcon>
#include <QStyle>

class QWidget;

namespace Sandbox::Ui {

// Look-and-feel helpers shared by the desktop app's widgets.
namespace Style {

// The fixed-pitch font for consoles, editors and their margins (never a serif fallback).
QFont monospaceFont(int pointSize = 0);
// The colour of a sandbox status dot: running green, creating/starting amber, sleeping blue,
// stopped grey, error red.
QColor statusColor(const QString &status);
// A round dot of that colour, `size` pixels wide.
QIcon statusIcon(const QString &status, int size = 12);
// An icon from the desktop's theme, else the style's built-in one (a bare machine has no theme).
QIcon icon(const char *themeName, QStyle::StandardPixmap fallback, const QWidget *widget = nullptr);
// "12 ms", "3.4 s", "2 min 05 s".
QString formatDuration(qint64 ms);
// "512 B", "12.3 KiB", "4.0 MiB".
QString formatSize(qint64 bytes);

} // namespace Style

} // namespace Sandbox::Ui
