# Precompiled headers for a build without a compiler cache (a fresh machine: CI, a first
# scripts/setup.sh). Most of a translation unit's time here is GCC parsing the same Qt and
# standard headers again; two precompiled headers, each compiled once, serve every target:
#   sandbox_pch_core     Qt Core and the standard library: every target that links Qt;
#   sandbox_pch_widgets  the same and Qt Widgets: every target that links Qt Widgets.
# The targets that link no Qt (the supervisor, sandbox-dbhost) get none. Sources still include
# what they use: a build without precompiled headers (SANDBOX_PCH=OFF) must compile too.
# Off by default under a compiler launcher (ccache caches no compile that uses a precompiled
# header unless told to be sloppy about it; with a warm cache it is faster without).
include_guard(GLOBAL)
include(SandboxLayers)

if(CMAKE_CXX_COMPILER_LAUNCHER)
    set(_sandbox_pch_default OFF)
else()
    set(_sandbox_pch_default ON)
endif()
option(SANDBOX_PCH "Precompiled headers (Qt, the standard library) for a build without ccache"
       ${_sandbox_pch_default})

set(_SANDBOX_PCH_CORE
    <QByteArray> <QCoreApplication> <QDateTime> <QDeadlineTimer> <QDir> <QElapsedTimer> <QFile>
    <QFileInfo> <QHash> <QJsonArray> <QJsonDocument> <QJsonObject> <QJsonValue> <QList>
    <QLoggingCategory> <QMap> <QObject> <QPointer> <QProcess> <QRegularExpression> <QSet>
    <QString> <QStringList> <QTemporaryDir> <QTimer> <QUrl>
    <algorithm> <functional> <memory> <optional> <vector>)
set(_SANDBOX_PCH_WIDGETS
    <QApplication> <QWidget> <QLabel> <QVBoxLayout> <QHBoxLayout> <QPushButton> <QToolButton>
    <QLineEdit> <QTableView> <QTreeView> <QHeaderView> <QTabWidget> <QPainter> <QAction>
    <QDialog> <QPlainTextEdit>)

# The donor of one precompiled header: a target with no code of its own, with the flags of the
# targets that reuse it (GCC does not use a precompiled header made with other options or other
# macros; CMake adds -Winvalid-pch, which then says so).
function(_sandbox_pch_donor name)
    set(source ${CMAKE_BINARY_DIR}/${name}.cpp)
    if(NOT EXISTS ${source})
        file(WRITE ${source} "// The donor of ${name}'s precompiled header (cmake/SandboxPch.cmake).\n")
    endif()
    add_library(${name} OBJECT ${source})
    sandbox_target_defaults(${name})
    target_link_libraries(${name} PRIVATE ${ARGN})
    set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON AUTOMOC OFF AUTOUIC OFF)
endfunction()

function(_sandbox_pch_targets dir out)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
        _sandbox_pch_targets(${sub} more)
        list(APPEND targets ${more})
    endforeach()
    set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Called once at the end of the top-level CMakeLists.txt, when every target exists.
function(sandbox_precompile_headers)
    if(NOT SANDBOX_PCH)
        return()
    endif()
    _sandbox_pch_donor(sandbox_pch_core Qt6::Core)
    target_precompile_headers(sandbox_pch_core PRIVATE ${_SANDBOX_PCH_CORE})
    set(widgets_donor "")
    if(BUILD_DESKTOP)
        find_package(Qt6 6.4 REQUIRED COMPONENTS Widgets)
        _sandbox_pch_donor(sandbox_pch_widgets Qt6::Widgets)
        target_precompile_headers(sandbox_pch_widgets PRIVATE ${_SANDBOX_PCH_CORE} ${_SANDBOX_PCH_WIDGETS})
        set(widgets_donor sandbox_pch_widgets)
    endif()
    _sandbox_pch_targets(${PROJECT_SOURCE_DIR} targets)
    foreach(target IN LISTS targets)
        get_target_property(type ${target} TYPE)
        if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$"
           OR target MATCHES "^sandbox_pch_")
            continue()
        endif()
        _sandbox_link_closure(${target} closure)
        if(widgets_donor AND ("Qt6::Widgets" IN_LIST closure OR "Qt::Widgets" IN_LIST closure))
            set(donor ${widgets_donor})
        elseif("Qt6::Core" IN_LIST closure OR "Qt::Core" IN_LIST closure)
            set(donor sandbox_pch_core)
        else()
            continue()
        endif()
        set_property(TARGET ${target} PROPERTY PRECOMPILE_HEADERS_REUSE_FROM ${donor})
        # A precompiled header GCC does not take is a slower build, not a broken one: a warning
        # even with WARNINGS_AS_ERRORS (the source's own includes are parsed instead).
        target_compile_options(${target} PRIVATE -Wno-error=invalid-pch)
    endforeach()
endfunction()
