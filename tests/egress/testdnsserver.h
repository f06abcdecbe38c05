#pragma once

#include <QByteArray>
#include <QHash>
#include <QHostAddress>
#include <QList>
#include <QObject>
#include <QString>

class QUdpSocket;

// A DNS server for tests, on 127.0.0.1 (UDP, any free port): answers A and AAAA questions from a
// table, and misbehaves on request (silence, wrong ids first, extra records for other names,
// CNAME chains, a compression loop). Its encoder is its own, so the engine's parser is checked
// against an independent writer.
class TestDnsServer final : public QObject
{
    Q_OBJECT

public:
    struct Name
    {
        QList<QHostAddress> addresses; // A and AAAA records by protocol
        QString cname;                 // answered as a CNAME to this name first (then its records)
        bool nxdomain = false;
        bool silent = false;     // never answered
        bool spoofFirst = false; // a wrong-id answer with 127.0.0.1 comes before the real one
        QHostAddress poison;     // an extra A record for another name in the same answer
        int extraRecords = 0;    // that many more A records (198.51.100.x)
        int ttl = 60;
        bool loop = false; // the answer's name is a compression pointer to itself
    };

    explicit TestDnsServer(QObject *parent = nullptr);
    ~TestDnsServer() override;

    bool listen();
    quint16 port() const;
    void set(const QString &name, const Name &answer) { m_names.insert(name.toLower(), answer); }
    void set(const QString &name, const QList<QHostAddress> &addresses)
    {
        Name n;
        n.addresses = addresses;
        set(name, n);
    }
    int queries() const { return m_queries; }
    int queriesFor(const QString &name) const { return m_perName.value(name.toLower()); }

private:
    void onReadyRead();
    QByteArray answer(const QByteArray &query, quint16 idOverride, bool spoof);

    QUdpSocket *m_socket; // owned (child)
    QHash<QString, Name> m_names;
    QHash<QString, int> m_perName;
    int m_queries = 0;
};
