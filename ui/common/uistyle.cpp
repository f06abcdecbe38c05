#include "uistyle.h"

#include <protocol/sandboxenums.h>

#include <QApplication>
#include <QEvent>
#include <QFontDatabase>
#include <QFontInfo>
#include <QPainter>
#include <QPalette>
#include <QPixmap>
#include <QPointer>
#include <QTabBar>
#include <QToolButton>
#include <QWidget>

#include <cmath>

namespace Sandbox::Ui::Style {

namespace {

qreal channel(int v)
{
    const qreal c = v / 255.0;
    return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

qreal luminance(const QColor &c)
{
    return 0.2126 * channel(c.red()) + 0.7152 * channel(c.green()) + 0.0722 * channel(c.blue());
}

// The hue of each tone, as on a light page (GitHub's Primer palette); readableOn() adapts them.
QColor baseColor(Tone tone)
{
    switch (tone) {
    case Tone::Normal:
        break;
    case Tone::Error:
        return QColor(0xcf, 0x22, 0x2e);
    case Tone::Warning:
        return QColor(0x9a, 0x67, 0x00);
    case Tone::Success:
        return QColor(0x1a, 0x7f, 0x37);
    case Tone::Info:
        return QColor(0x09, 0x69, 0xda);
    case Tone::Muted:
        return QColor(0x65, 0x6d, 0x76);
    }
    return QColor(0x65, 0x6d, 0x76);
}

// Re-applies a tone to a widget's text (or its background) when the palette changes.
class ToneKeeper final : public QObject
{
public:
    enum class Role { Text, Background };

    ToneKeeper(QWidget *widget, Tone tone, Role role)
        : QObject(widget)
        , m_widget(widget)
        , m_tone(tone)
        , m_role(role)
    {
        setObjectName(role == Role::Text ? QStringLiteral("textTone")
                                         : QStringLiteral("backgroundTone"));
        widget->installEventFilter(this);
        apply();
    }
    void setTone(Tone tone)
    {
        m_tone = tone;
        apply();
    }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (watched == m_widget
            && (event->type() == QEvent::ApplicationPaletteChange
                || event->type() == QEvent::PaletteChange)
            && !m_applying)
            apply();
        return QObject::eventFilter(watched, event);
    }

private:
    void apply()
    {
        if (!m_widget)
            return;
        m_applying = true;
        // Derive from the inherited palette, not from the tone set last time.
        const QPalette base = m_widget->parentWidget() ? m_widget->parentWidget()->palette()
                                                       : QApplication::palette(m_widget);
        QPalette p = m_widget->palette();
        if (m_role == Role::Text) {
            const QColor c = color(m_tone, base);
            p.setColor(QPalette::WindowText, c);
            p.setColor(QPalette::Text, c);
        } else {
            const QColor c = m_tone == Tone::Normal ? base.color(QPalette::Window)
                                                    : background(m_tone, base);
            p.setColor(QPalette::Window, c);
            p.setColor(QPalette::WindowText, base.color(QPalette::Text));
            m_widget->setAutoFillBackground(true);
        }
        if (p != m_widget->palette())
            m_widget->setPalette(p);
        m_applying = false;
    }

    QPointer<QWidget> m_widget;
    Tone m_tone;
    Role m_role;
    bool m_applying = false;
};

void keepTone(QWidget *widget, Tone tone, ToneKeeper::Role role)
{
    const QString name = role == ToneKeeper::Role::Text ? QStringLiteral("textTone")
                                                        : QStringLiteral("backgroundTone");
    if (auto *keeper = widget->findChild<ToneKeeper *>(name, Qt::FindDirectChildrenOnly))
        keeper->setTone(tone);
    else
        new ToneKeeper(widget, tone, role);
}

} // namespace

QPalette darkPalette()
{
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1e, 0x1f, 0x22), text(0xdf, 0xe1, 0xe5);
    const QColor button(0x3a, 0x3d, 0x42), highlight(0x2f, 0x6f, 0xc4);
    const QColor disabled(0x7c, 0x80, 0x87);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x26, 0x28, 0x2b));
    p.setColor(QPalette::ToolTipBase, button);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, disabled);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, button);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
    p.setColor(QPalette::Light, QColor(0x4a, 0x4d, 0x52));
    p.setColor(QPalette::Midlight, QColor(0x40, 0x43, 0x48));
    p.setColor(QPalette::Mid, QColor(0x5f, 0x63, 0x6a));
    p.setColor(QPalette::Dark, QColor(0x1a, 0x1b, 0x1e));
    p.setColor(QPalette::Shadow, QColor(0x10, 0x10, 0x12));
    p.setColor(QPalette::Highlight, highlight);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xb6, 0xff));
    p.setColor(QPalette::LinkVisited, QColor(0xb3, 0x9d, 0xf3));
    for (const auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
        p.setColor(QPalette::Disabled, role, disabled);
    }
    p.setColor(QPalette::Disabled, QPalette::Base, window);
    p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x4a, 0x4d, 0x52));
    return p;
}

bool isDark(const QPalette &palette)
{
    return luminance(palette.color(QPalette::Base)) < luminance(palette.color(QPalette::Text));
}

QColor blend(const QColor &a, const QColor &b, qreal t)
{
    const auto mix = [t](int x, int y) { return qBound(0, qRound(x + (y - x) * t), 255); };
    return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

qreal contrast(const QColor &a, const QColor &b)
{
    const qreal la = luminance(a), lb = luminance(b);
    return (qMax(la, lb) + 0.05) / (qMin(la, lb) + 0.05);
}

QColor readableOn(const QColor &foreground, const QColor &background, qreal minContrast)
{
    if (!foreground.isValid())
        return foreground;
    const bool darkBackground = luminance(background) < 0.18;
    float h = 0, s = 0, l = 0, a = 1;
    foreground.getHslF(&h, &s, &l, &a);
    if (darkBackground && l < 0.5f)
        l = 1.0f - l; // mirror: navy -> light blue, black -> white
    QColor c = QColor::fromHslF(h, s, l, a);
    const float step = darkBackground ? 0.03f : -0.03f;
    for (int i = 0; i < 40 && contrast(c, background) < minContrast; ++i) {
        l = qBound(0.0f, l + step, 1.0f);
        c = QColor::fromHslF(h, s, l, a);
        if (l <= 0.0f || l >= 1.0f)
            break;
    }
    return c.toRgb();
}

QColor color(Tone tone, const QPalette &palette)
{
    if (tone == Tone::Normal)
        return palette.color(QPalette::WindowText);
    const QColor base = palette.color(QPalette::Base);
    const QColor window = palette.color(QPalette::Window);
    // Readable on both, since labels sit on the window and cells on the base.
    const QColor darker = luminance(base) < luminance(window) ? base : window;
    const QColor lighter = luminance(base) < luminance(window) ? window : base;
    return readableOn(baseColor(tone), isDark(palette) ? lighter : darker);
}

QColor background(Tone tone, const QPalette &palette)
{
    return blend(palette.color(QPalette::Base), color(tone, palette), isDark(palette) ? 0.22 : 0.12);
}

void setTextTone(QWidget *widget, Tone tone)
{
    keepTone(widget, tone, ToneKeeper::Role::Text);
}

void setBackgroundTone(QWidget *widget, Tone tone)
{
    keepTone(widget, tone, ToneKeeper::Role::Background);
}

QString htmlColor(const QColor &color)
{
    return color.name(QColor::HexRgb);
}

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
    if (pointSize <= 0 && qApp)
        pointSize = qApp->property("sandboxMonospacePointSize").toInt();
    font.setPointSize(pointSize > 0 ? pointSize : qMax(9, QApplication::font().pointSize()));
    return font;
}

void setMonospacePointSize(int pointSize)
{
    if (qApp)
        qApp->setProperty("sandboxMonospacePointSize", pointSize);
}

QColor statusColor(const QString &status)
{
    switch (fromWire<SandboxStatus>(status)) {
    case SandboxStatus::Running:
        return QColor(0x2e, 0xa0, 0x43);
    case SandboxStatus::Creating:
    case SandboxStatus::Starting:
        return QColor(0xd9, 0x8e, 0x04);
    case SandboxStatus::Sleeping:
        return QColor(0x3b, 0x82, 0xc4);
    case SandboxStatus::Error:
        return QColor(0xcf, 0x22, 0x2e);
    case SandboxStatus::Stopped:
    case SandboxStatus::Unknown:
        break;
    }
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

QIcon keyIcon(int size)
{
    QPixmap pixmap(size * 2, size * 2);
    pixmap.fill(Qt::transparent);
    QPainter p(&pixmap);
    p.setRenderHint(QPainter::Antialiasing);
    const qreal s = size * 2;
    const QColor c(0xd9, 0x8e, 0x04);
    p.setPen(QPen(c.darker(140), s * 0.06));
    p.setBrush(c);
    // The bow (a ring) and the blade with two teeth.
    p.drawEllipse(QRectF(s * 0.08, s * 0.28, s * 0.42, s * 0.42));
    p.setBrush(Qt::transparent);
    p.drawEllipse(QRectF(s * 0.2, s * 0.4, s * 0.18, s * 0.18));
    p.setBrush(c);
    p.drawRect(QRectF(s * 0.48, s * 0.44, s * 0.44, s * 0.12));
    p.drawRect(QRectF(s * 0.72, s * 0.56, s * 0.08, s * 0.14));
    p.drawRect(QRectF(s * 0.84, s * 0.56, s * 0.08, s * 0.1));
    p.end();
    pixmap.setDevicePixelRatio(2.0);
    return QIcon(pixmap);
}

namespace {

constexpr char kQuietClose[] = "quietTabClose";

// Puts its own close button on each tab of the bar as tabs come (QTabBar makes its own in
// insertTab(), a child: ChildAdded), and keeps the icon on a style change.
class QuietCloseButtons final : public QObject
{
public:
    explicit QuietCloseButtons(QTabBar *bar)
        : QObject(bar)
        , m_bar(bar)
    {
        bar->installEventFilter(this);
        replace();
    }

    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (watched == m_bar
            && (event->type() == QEvent::ChildAdded || event->type() == QEvent::StyleChange)
            && !m_pending) {
            m_pending = true;
            QMetaObject::invokeMethod(
                this,
                [this] {
                    m_pending = false;
                    replace();
                },
                Qt::QueuedConnection);
        }
        return false;
    }

private:
    QTabBar::ButtonPosition side() const
    {
        return QTabBar::ButtonPosition(
            m_bar->style()->styleHint(QStyle::SH_TabBar_CloseButtonPosition, nullptr, m_bar));
    }

    void replace()
    {
        const QTabBar::ButtonPosition pos = side();
        const QIcon closeIcon = m_bar->style()->standardIcon(QStyle::SP_TitleBarCloseButton,
                                                             nullptr, m_bar);
        for (int i = 0; i < m_bar->count(); ++i) {
            QWidget *current = m_bar->tabButton(i, pos);
            if (!current)
                continue;
            if (current->objectName() == QLatin1String(kQuietClose)) {
                static_cast<QToolButton *>(current)->setIcon(closeIcon);
                continue;
            }
            auto *button = new QToolButton(m_bar);
            button->setObjectName(QLatin1String(kQuietClose));
            button->setAutoRaise(true);
            button->setFocusPolicy(Qt::NoFocus);
            button->setCursor(Qt::ArrowCursor);
            button->setIcon(closeIcon);
            const int w = m_bar->style()->pixelMetric(QStyle::PM_TabCloseIndicatorWidth, nullptr,
                                                      m_bar);
            const int h = m_bar->style()->pixelMetric(QStyle::PM_TabCloseIndicatorHeight, nullptr,
                                                      m_bar);
            button->setFixedSize(w + 2, h + 2);
            button->setIconSize(QSize(w - 2, h - 2));
            button->setToolTip(current->toolTip().isEmpty() ? QTabBar::tr("Close Tab")
                                                            : current->toolTip());
            connect(button, &QToolButton::clicked, this, [this, button] {
                const QTabBar::ButtonPosition p = side();
                for (int t = 0; t < m_bar->count(); ++t) {
                    if (m_bar->tabButton(t, p) == button) {
                        Q_EMIT m_bar->tabCloseRequested(t);
                        return;
                    }
                }
            });
            m_bar->setTabButton(i, pos, button);
            current->hide();
            current->deleteLater();
        }
    }

    QTabBar *m_bar;
    bool m_pending = false;
};

} // namespace

void useQuietCloseButtons(QTabBar *bar)
{
    static const char kInstalled[] = "sandboxQuietCloseButtons";
    if (bar->property(kInstalled).toBool())
        return;
    bar->setProperty(kInstalled, true);
    new QuietCloseButtons(bar);
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
