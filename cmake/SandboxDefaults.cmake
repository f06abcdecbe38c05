# Project-wide compile settings, applied per target through sandbox_target_defaults().
include_guard(GLOBAL)

set(SANDBOX_VERSION "${PROJECT_VERSION}")

function(sandbox_target_defaults target)
    target_compile_definitions(${target} PRIVATE
        QT_NO_CAST_FROM_ASCII
        QT_NO_CONTEXTLESS_CONNECT
        QT_USE_QSTRINGBUILDER
        SANDBOX_VERSION="${SANDBOX_VERSION}")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
    if(WARNINGS_AS_ERRORS)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()

# sandbox_add_test(NAME name SOURCES ... LIBS ... [GUI] [LABELS ...] [TIMEOUT s])
# One executable, one ctest entry, the source and build trees as SANDBOX_SOURCE_DIR and
# SANDBOX_BINARY_DIR, and the offscreen platform for widget tests.
function(sandbox_add_test)
    cmake_parse_arguments(T "GUI" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
    add_executable(${T_NAME} ${T_SOURCES})
    sandbox_target_defaults(${T_NAME})
    target_link_libraries(${T_NAME} PRIVATE Qt6::Test ${T_LIBS})
    target_compile_definitions(${T_NAME} PRIVATE
        SANDBOX_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
        SANDBOX_BINARY_DIR="${PROJECT_BINARY_DIR}")
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 300)
    endif()
    # COST: a fresh machine (CI) has no timings from an earlier run, so ctest -j starts the suites
    # with the longest time-outs (the longest suites) first instead of last in declaration order.
    set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} COST ${T_TIMEOUT}
                                              LABELS "${T_LABELS}")
    if(T_GUI)
        set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "QT_QPA_PLATFORM=offscreen")
    endif()
endfunction()
