#pragma once

#include <QColor>
#include <QFont>
#include <QIcon>
#include <QStyle>

class QPalette;
class QTabBar;
class QWidget;

namespace Sandbox::Ui {

// Look-and-feel helpers shared by the desktop app's widgets.
namespace Style {

// The fixed-pitch font for consoles, editors and their margins (never a serif fallback).
QFont monospaceFont(int pointSize = 0);
// The point size monospaceFont() uses when none is asked for (the preferences'), kept by the
// application object; 0: the application font's.
void setMonospacePointSize(int pointSize);
// The colour of a sandbox status dot: running green, creating/starting amber, sleeping blue,
// stopped grey, error red.
QColor statusColor(const QString &status);
// A round dot of that colour, `size` pixels wide.
QIcon statusIcon(const QString &status, int size = 12);
// A small key (a primary key's column), drawn in an amber that reads on light and dark bases.
QIcon keyIcon(int size = 16);
// An icon from the desktop's theme, else the style's built-in one (a bare machine has no theme).
QIcon icon(const char *themeName, QStyle::StandardPixmap fallback, const QWidget *widget = nullptr);
// Gives every tab of `bar` (now and later) a close button with the style's plain close icon, the
// one on dock widgets, instead of Fusion's red box; a click asks to close that tab
// (tabCloseRequested), wherever it was moved.
void useQuietCloseButtons(QTabBar *bar);
// Colours with a meaning, derived from a palette so that they read on a light and a dark one.
enum class Tone {
    Normal,  // the palette's own text colour
    Error,   // failures, refused input
    Warning, // something to know before going on
    Success, // done, added
    Info,    // neutral highlights, links
    Muted,   // secondary text, hints
};
// A dark palette for the Fusion style (the "Dark" theme of the preferences, and the tests).
QPalette darkPalette();
// Whether the palette's text is light on a dark base.
bool isDark(const QPalette &palette);
// The colour of `tone` as text on the palette's base (and window).
QColor color(Tone tone, const QPalette &palette);
// A soft background of `tone` (cards, banners) on which the palette's text reads.
QColor background(Tone tone, const QPalette &palette);
// `a` mixed with `b`: t = 0 is a, t = 1 is b.
QColor blend(const QColor &a, const QColor &b, qreal t);
// WCAG contrast ratio of two colours (1 to 21).
qreal contrast(const QColor &a, const QColor &b);
// `foreground` with its hue kept and its lightness moved until it reads on `background` with at
// least `minContrast` (4.5 is WCAG AA for text). On a dark background a dark colour is first
// mirrored to its light counterpart (navy becomes light blue).
QColor readableOn(const QColor &foreground, const QColor &background, qreal minContrast = 4.5);
// Gives `widget`'s text (QPalette::WindowText and Text) the colour of `tone`, and keeps it so when
// the application's palette changes (a theme switch).
void setTextTone(QWidget *widget, Tone tone);
// Gives `widget` (a banner, a card) the soft background of `tone` with the palette's text on it,
// kept so when the palette changes.
void setBackgroundTone(QWidget *widget, Tone tone);
// "#rrggbb" of a colour, for rich text.
QString htmlColor(const QColor &color);

// "12 ms", "3.4 s", "2 min 05 s".
QString formatDuration(qint64 ms);
// "512 B", "12.3 KiB", "4.0 MiB".
QString formatSize(qint64 bytes);

} // namespace Style

} // namespace Sandbox::Ui
