#pragma once

#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <sys/types.h>

// A prepared host tree for the doctor's and the cgroup host's tests, built in a temporary
// directory from fixture files (trees/*.tree, see trees/README.md).
class HostTree final
{
public:
    // `fixtures`: names without ".tree", applied in order (later ones override).
    explicit HostTree(const QStringList &fixtures);

    bool isValid() const { return m_error.isEmpty(); }
    QString error() const { return m_error; }
    QString root() const { return m_dir.path(); }
    // An absolute host path inside the tree.
    QString path(const QString &absolute) const { return m_dir.path() + absolute; }

    bool write(const QString &absolute, const QByteArray &content, int mode = 0644);
    bool remove(const QString &absolute);
    // chown -R of a directory of the tree (needs root).
    bool chown(const QString &absolute, uid_t uid);

private:
    bool load(const QString &fixture);

    QTemporaryDir m_dir;
    QString m_error;
};
