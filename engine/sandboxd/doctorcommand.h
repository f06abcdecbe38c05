#pragma once

#include <QString>
#include <QStringList>

// `sandboxd doctor [options]`: checks the host for what sandboxes need and prints the report
// (engine/doctor/doctor.h). Exit status 0 when no check failed, 1 when one did, 2 on bad usage.
int runDoctorCommand(const QStringList &arguments, const QString &defaultDataDir);
