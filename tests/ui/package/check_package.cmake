# cmake -DBINARY_DIR=... -DSCRATCH=... -DVERSION=... -DWITH_SANDBOXCTL=ON|OFF -P check_package.cmake
cmake_minimum_required(VERSION 3.21)

function(fail msg)
    message(FATAL_ERROR "tst_package: ${msg}")
endfunction()

file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}/out" "${SCRATCH}/root")

get_filename_component(_cmake_dir "${CMAKE_COMMAND}" DIRECTORY)
find_program(CPACK cpack HINTS "${_cmake_dir}" REQUIRED)
execute_process(COMMAND "${CPACK}" -G DEB -B "${SCRATCH}/out" --config "${BINARY_DIR}/CPackConfig.cmake"
                WORKING_DIRECTORY "${BINARY_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    fail("cpack failed (${rc}):\n${out}\n${err}")
endif()
file(GLOB debs "${SCRATCH}/out/*.deb")
list(LENGTH debs n)
if(NOT n EQUAL 1)
    fail("expected one .deb in ${SCRATCH}/out, found ${n}: ${debs}")
endif()
list(GET debs 0 deb)
message(STATUS "package: ${deb}")

execute_process(COMMAND dpkg-deb -x "${deb}" "${SCRATCH}/root" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    fail("dpkg-deb -x: ${err}")
endif()

# The files.
set(expected
    usr/bin/sandbox-desktop
    usr/bin/sandboxd
    usr/libexec/sandbox-desktop/sandbox-supervisor
    usr/share/applications/dev.sandboxdesktop.SandboxDesktop.desktop
    usr/share/metainfo/dev.sandboxdesktop.SandboxDesktop.metainfo.xml
    usr/share/icons/hicolor/scalable/apps/dev.sandboxdesktop.SandboxDesktop.svg
    usr/share/icons/hicolor/48x48/apps/dev.sandboxdesktop.SandboxDesktop.png
    usr/share/icons/hicolor/256x256/apps/dev.sandboxdesktop.SandboxDesktop.png
    usr/share/doc/sandbox-desktop/copyright)
if(WITH_SANDBOXCTL)
    list(APPEND expected usr/bin/sandboxctl)
endif()
foreach(f IN LISTS expected)
    if(NOT EXISTS "${SCRATCH}/root/${f}")
        fail("missing ${f}")
    endif()
endforeach()

# The licence: MIT, in Debian's copyright format.
file(READ "${SCRATCH}/root/usr/share/doc/sandbox-desktop/copyright" copyright)
if(NOT copyright MATCHES "\nLicense: MIT\n")
    fail("usr/share/doc/sandbox-desktop/copyright does not say MIT")
endif()

# Depends: the shared libraries (dpkg-shlibdeps) and what is loaded or run at run time.
execute_process(COMMAND dpkg-deb -f "${deb}" Package Version Architecture Depends
                OUTPUT_VARIABLE fields RESULT_VARIABLE rc)
message(STATUS "control:\n${fields}")
foreach(dep bubblewrap libqt6gui6 libqt6widgets6 libqt6websockets6 libqt6keychain1 libqscintilla2-qt6-15 libsqlite3-0 libc6)
    if(NOT fields MATCHES "[ ,]${dep}[ (,\n]")
        fail("Depends lacks ${dep}")
    endif()
endforeach()
if(NOT fields MATCHES "Version: ${VERSION}")
    fail("the package's version is not ${VERSION}")
endif()

# The metadata validates.
find_program(APPSTREAMCLI appstreamcli)
if(APPSTREAMCLI)
    execute_process(COMMAND "${APPSTREAMCLI}" validate --no-net
                            "${SCRATCH}/root/usr/share/metainfo/dev.sandboxdesktop.SandboxDesktop.metainfo.xml"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        fail("appstreamcli validate:\n${out}${err}")
    endif()
endif()
find_program(DESKTOP_FILE_VALIDATE desktop-file-validate)
if(DESKTOP_FILE_VALIDATE)
    execute_process(COMMAND "${DESKTOP_FILE_VALIDATE}"
                            "${SCRATCH}/root/usr/share/applications/dev.sandboxdesktop.SandboxDesktop.desktop"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        fail("desktop-file-validate:\n${out}${err}")
    endif()
endif()

# The programs run from the scratch root (no display needed for --version).
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY
                        "${SCRATCH}/root/usr/bin/sandbox-desktop" --version
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${out}" out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "sandbox-desktop ${VERSION}")
    fail("sandbox-desktop --version from the package: rc=${rc} out='${out}' err='${err}'")
endif()
execute_process(COMMAND "${SCRATCH}/root/usr/bin/sandboxd" --version
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(STRIP "${out}" out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "sandboxd ${VERSION}")
    fail("sandboxd --version from the package: rc=${rc} out='${out}' err='${err}'")
endif()
message(STATUS "tst_package: ${deb} unpacks; sandbox-desktop --version says '${VERSION}'")
