// plot_density CSV PNG: draws bench_density's CSV — exec round trip (median, p99) and memory
// (the engine's RSS, the sandboxes' processes) against the number of idle sandboxes — with
// QPainter, so that the plot needs nothing the build does not have.
#include <QFile>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace {

struct Series
{
    QString name;
    QColor color;
    QList<QPointF> points; // (idle sandboxes, value)
};

void drawPanel(QPainter &p, const QRectF &area, const QString &title, const QString &unit,
               const QList<Series> &series)
{
    double maxX = 1, maxY = 0;
    for (const Series &s : series) {
        for (const QPointF &pt : s.points) {
            maxX = std::max(maxX, pt.x());
            maxY = std::max(maxY, pt.y());
        }
    }
    // Gridlines at a round step (1, 2 or 5 times a power of ten), the top one above every point.
    const double rough = (maxY <= 0 ? 1 : maxY * 1.1) / 4;
    const double power = std::pow(10.0, std::floor(std::log10(rough)));
    const double step = rough <= power       ? power
                        : rough <= 2 * power ? 2 * power
                        : rough <= 5 * power ? 5 * power
                                             : 10 * power;
    const int lines = int(std::ceil((maxY <= 0 ? 1 : maxY * 1.1) / step));
    maxY = step * lines;
    const QRectF plot = area.adjusted(70, 40, -20, -50);
    p.setPen(Qt::black);
    QFont bold = p.font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRectF(area.left(), area.top() + 8, area.width(), 24), Qt::AlignCenter, title);
    p.setFont(QFont());
    p.drawRect(plot);
    const auto map = [&](const QPointF &v) {
        return QPointF(plot.left() + v.x() / maxX * plot.width(),
                       plot.bottom() - v.y() / maxY * plot.height());
    };
    for (int i = 0; i <= lines; ++i) {
        const double y = step * i;
        const QPointF at = map({0, y});
        p.setPen(QColor(220, 220, 220));
        p.drawLine(QPointF(plot.left(), at.y()), QPointF(plot.right(), at.y()));
        p.setPen(Qt::black);
        p.drawText(QRectF(area.left(), at.y() - 10, 64, 20), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(y, 'g', 6));
    }
    for (const QPointF &pt : series.value(0).points) {
        const QPointF at = map({pt.x(), 0});
        p.drawText(QRectF(at.x() - 30, plot.bottom() + 4, 60, 20), Qt::AlignCenter,
                   QString::number(pt.x()));
    }
    p.drawText(QRectF(plot.left(), plot.bottom() + 24, plot.width(), 20), Qt::AlignCenter,
               QStringLiteral("idle sandboxes"));
    p.save();
    p.translate(area.left() + 14, plot.center().y());
    p.rotate(-90);
    p.drawText(QRectF(-100, -10, 200, 20), Qt::AlignCenter, unit);
    p.restore();
    int legend = 0;
    for (const Series &s : series) {
        QPainterPath path;
        for (qsizetype i = 0; i < s.points.size(); ++i) {
            const QPointF at = map(s.points[i]);
            if (i == 0)
                path.moveTo(at);
            else
                path.lineTo(at);
        }
        p.setPen(QPen(s.color, 2.5));
        p.drawPath(path);
        for (const QPointF &pt : s.points)
            p.drawEllipse(map(pt), 3.5, 3.5);
        const QPointF l(plot.left() + 12, plot.top() + 16 + 20 * legend++);
        p.drawLine(l, l + QPointF(24, 0));
        p.setPen(Qt::black);
        p.drawText(l + QPointF(30, 5), s.name);
    }
}

} // namespace

int main(int argc, char **argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QGuiApplication app(argc, argv);
    if (argc != 3) {
        std::fprintf(stderr, "usage: plot_density DENSITY.csv OUT.png\n");
        return 2;
    }
    QFile csv(QString::fromLocal8Bit(argv[1]));
    if (!csv.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "plot_density: cannot read %s\n", argv[1]);
        return 1;
    }
    const QList<QByteArray> lines = csv.readAll().trimmed().split('\n');
    const QList<QByteArray> header = lines.value(0).split(',');
    const auto column = [&](const char *name) { return header.indexOf(QByteArray(name)); };
    Series median{QStringLiteral("exec RTT median (busy sandbox)"), QColor(31, 119, 180), {}};
    Series p99{QStringLiteral("exec RTT p99"), QColor(255, 127, 14), {}};
    Series engine{QStringLiteral("engine RSS"), QColor(44, 160, 44), {}};
    Series sandboxes{QStringLiteral("sandboxes' processes (PSS)"), QColor(214, 39, 40), {}};
    Series cgroups{QStringLiteral("sandboxes' cgroups (memory.current)"), QColor(148, 103, 189), {}};
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QList<QByteArray> f = lines[i].split(',');
        const double x = f.value(column("idle")).toDouble();
        median.points.append({x, f.value(column("exec_median_ms")).toDouble()});
        p99.points.append({x, f.value(column("exec_p99_ms")).toDouble()});
        engine.points.append({x, f.value(column("engine_rss_kib")).toDouble() / 1024});
        sandboxes.points.append({x, f.value(column("sandbox_pss_kib")).toDouble() / 1024});
        if (const double c = f.value(column("cgroup_kib")).toDouble(); c >= 0)
            cgroups.points.append({x, c / 1024});
    }
    if (median.points.isEmpty()) {
        std::fprintf(stderr, "plot_density: no rows in %s\n", argv[1]);
        return 1;
    }
    QImage image(1400, 560, QImage::Format_RGB32);
    image.fill(Qt::white);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    drawPanel(p, QRectF(0, 0, 700, 560), QStringLiteral("exec round trip on a busy sandbox"),
              QStringLiteral("ms"), {median, p99});
    QList<Series> memory{engine, sandboxes};
    if (cgroups.points.size() == median.points.size())
        memory.append(cgroups);
    drawPanel(p, QRectF(700, 0, 700, 560), QStringLiteral("memory"), QStringLiteral("MiB"), memory);
    p.end();
    if (!image.save(QString::fromLocal8Bit(argv[2]))) {
        std::fprintf(stderr, "plot_density: cannot write %s\n", argv[2]);
        return 1;
    }
    std::printf("plot: %s\n", argv[2]);
    return 0;
}
