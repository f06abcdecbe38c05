#pragma once

#include <QDialog>

class QComboBox;
class QSpinBox;

namespace Sandbox::Ui {

// The app's preferences: the theme (the system's, light or dark) and the size of the fixed-pitch
// font of editors and consoles, kept in the settings and applied at once; the engine and its keys
// are one click away (the Connect dialog).
class PreferencesDialog final : public QDialog
{
    Q_OBJECT

public:
    enum class Theme { System, Light, Dark };
    Q_ENUM(Theme)

    explicit PreferencesDialog(QWidget *parent = nullptr);

    Theme theme() const;
    void setTheme(Theme theme);

    // Reads the saved theme and applies it to the application (call once at start-up).
    static void applySaved();
    // Applies `theme` to the whole application: the Fusion style with a dark palette, or the
    // style's own palette.
    static void apply(Theme theme);
    static Theme savedTheme();

    void accept() override;

Q_SIGNALS:
    // The user asked for the engine and key settings.
    void connectionSettingsRequested();

private:
    QComboBox *m_theme;
    QSpinBox *m_fontSize;
};

} // namespace Sandbox::Ui
