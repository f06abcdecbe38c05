#include "uistyle.h"

#include <QApplication>
#include <QFontDatabase>
#include <QFontInfo>
#include <QPainter>
#include <QPixmap>
#include <QWidget>

namespace Sandbox::Ui::Style {

QFont monospaceFont(int pointSize)
{
    QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    // Some platforms answer a proportional or serif family here: insist on a fixed pitch.
    if (!QFontInfo(font).fixedPitch()) {
        font = QFont(QStringLiteral("DejaVu Sans Mono"));
        font.setStyleHint(QFont::TypeWriter, QFont::PreferDefault);
        font.setFixedPitch(true);
        if (!QFontInfo(font).fixedPitch())
            font.setFamily(QStringLiteral("Monospace"));
    }
    font.setStyleHint(QFont::TypeWriter);
    font.setPointSize(pointSize > 0 ? pointSize : qMax(9, QApplication::font().pointSize()));
    return font;
}

QColor statusColor(const QString &status)
{
    if (status == QLatin1String("running"))
        return QColor(0x2e, 0xa0, 0x43);
    if (status == QLatin1String("creating") || status == QLatin1String("starting"))
        return QColor(0xd9, 0x8e, 0x04);
    if (status == QLatin1String("sleeping"))
        return QColor(0x3b, 0x82, 0xc4);
    if (status == QLatin1String("error"))
        return QColor(0xcf, 0x22, 0x2e);
    return QColor(0x8c, 0x95, 0x9f); // stopped, unknown
}

QIcon statusIcon(const QString &status, int size)
{
    QPixmap pixmap(size * 2, size * 2); // drawn at 2x, scaled down crisply
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setRenderHint(QPainter::Antialiasing);
    const QColor c = statusColor(status);
    p.setPen(QPen(c.darker(130), 2));
    p.setBrush(c);
    const qreal m = size * 0.45;
    p.drawEllipse(QRectF(m, m, size * 2 - 2 * m, size * 2 - 2 * m));
    p.end();
    pixmap.setDevicePixelRatio(2.0);
    return QIcon(pixmap);
}

QIcon icon(const char *themeName, QStyle::StandardPixmap fallback, const QWidget *widget)
{
    const QString name = QString::fromLatin1(themeName);
    if (QIcon::hasThemeIcon(name))
        return QIcon::fromTheme(name);
    const QStyle *style = widget ? widget->style() : QApplication::style();
    return style->standardIcon(fallback, nullptr, widget);
}

QString formatDuration(qint64 ms)
{
    if (ms < 1000)
        return QStringLiteral("%1 ms").arg(ms);
    if (ms < 60000)
        return QStringLiteral("%1 s").arg(double(ms) / 1000.0, 0, 'f', ms < 10000 ? 2 : 1);
    const qint64 s = ms / 1000;
    if (s < 3600)
        return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString formatSize(qint64 bytes)
{
    if (bytes < 1024)
        return QStringLiteral("%1 B").arg(bytes);
    const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = -1;
    while (v >= 1024.0 && u < 3) {
        v /= 1024.0;
        ++u;
    }
    return QStringLiteral("%1 %2").arg(v, 0, 'f', v < 10 ? 1 : 0).arg(QLatin1String(units[u]));
}

} // namespace Sandbox::Ui::Style
