#include "preferencesdialog.h"

#include "../common/uistyle.h"

#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStyle>
#include <QStyleFactory>
#include <QVBoxLayout>

namespace Sandbox::Ui {

namespace {
const char *kThemeKey = "appearance/theme";
const char *kFontSizeKey = "appearance/monospacePointSize";

QString themeName(PreferencesDialog::Theme theme)
{
    switch (theme) {
    case PreferencesDialog::Theme::Light:
        return QStringLiteral("light");
    case PreferencesDialog::Theme::Dark:
        return QStringLiteral("dark");
    case PreferencesDialog::Theme::System:
        break;
    }
    return QStringLiteral("system");
}
} // namespace

PreferencesDialog::PreferencesDialog(QWidget *parent)
    : QDialog(parent)
    , m_theme(new QComboBox(this))
    , m_fontSize(new QSpinBox(this))
{
    setWindowTitle(tr("Preferences"));
    auto *layout = new QVBoxLayout(this);
    auto *form = new QFormLayout;
    m_theme->setObjectName(QStringLiteral("theme"));
    m_theme->addItem(tr("As the system"), int(Theme::System));
    m_theme->addItem(tr("Light"), int(Theme::Light));
    m_theme->addItem(tr("Dark"), int(Theme::Dark));
    m_fontSize->setObjectName(QStringLiteral("fontSize"));
    m_fontSize->setRange(7, 32);
    m_fontSize->setSuffix(tr(" pt"));
    m_fontSize->setValue(Style::monospaceFont().pointSize());
    form->addRow(tr("Theme:"), m_theme);
    form->addRow(tr("Code and console font:"), m_fontSize);
    auto *connection = new QPushButton(tr("Engine and API Keys…"), this);
    connection->setToolTip(tr("The engine to connect to and its keys (kept in the keyring)"));
    connect(connection, &QPushButton::clicked, this, [this] {
        reject();
        Q_EMIT connectionSettingsRequested();
    });
    form->addRow(tr("Connection:"), connection);
    layout->addLayout(form);
    auto *hint = new QLabel(tr("The font size applies to editors and consoles opened from now on."),
                            this);
    hint->setWordWrap(true);
    Style::setTextTone(hint, Style::Tone::Muted);
    layout->addWidget(hint);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &PreferencesDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &PreferencesDialog::reject);
    setTheme(savedTheme());
}

PreferencesDialog::Theme PreferencesDialog::theme() const
{
    return Theme(m_theme->currentData().toInt());
}

void PreferencesDialog::setTheme(Theme theme)
{
    m_theme->setCurrentIndex(m_theme->findData(int(theme)));
}

PreferencesDialog::Theme PreferencesDialog::savedTheme()
{
    const QString name = QSettings().value(QLatin1String(kThemeKey)).toString();
    if (name == QLatin1String("light"))
        return Theme::Light;
    if (name == QLatin1String("dark"))
        return Theme::Dark;
    return Theme::System;
}

void PreferencesDialog::applySaved()
{
    const int size = QSettings().value(QLatin1String(kFontSizeKey), 0).toInt();
    if (size > 0)
        Style::setMonospacePointSize(size);
    if (savedTheme() != Theme::System)
        apply(savedTheme());
}

void PreferencesDialog::apply(Theme theme)
{
    if (theme == Theme::System) {
        QApplication::setPalette(QApplication::style()->standardPalette());
        return;
    }
    // Fusion draws with the palette's colours everywhere (native styles may not).
    if (QApplication::style()->name().compare(QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(theme == Theme::Dark ? Style::darkPalette()
                                                  : QApplication::style()->standardPalette());
}

void PreferencesDialog::accept()
{
    QSettings settings;
    settings.setValue(QLatin1String(kThemeKey), themeName(theme()));
    settings.setValue(QLatin1String(kFontSizeKey), m_fontSize->value());
    Style::setMonospacePointSize(m_fontSize->value());
    apply(theme());
    QDialog::accept();
}

} // namespace Sandbox::Ui
