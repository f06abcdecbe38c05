#include "proxyconnection.h"

#include "egressproxy.h"
#include "fdpoller.h"

#include <QLoggingCategory>
#include <QPointer>

#include <arpa/inet.h>
#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

Q_LOGGING_CATEGORY(lcProxy, "sandboxd.egress.proxy")

namespace Sandbox::Engine {

namespace {

constexpr int kMaxResponseHeadBytes = 64 * 1024;
constexpr int kLingerMs = 1000;
constexpr qsizetype kLingerBytes = 64 * 1024;
constexpr int kPumpRounds = 8;
constexpr int kHalfClosedIdleMs = 60000;

void closeFd(int &fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

// "host:port" or "[v6]:port" (the authority of CONNECT, or of an http:// URL with a default).
bool splitAuthority(const QByteArray &authority, quint16 defaultPort, QString &host, quint16 &port)
{
    QByteArray h = authority;
    QByteArray p;
    if (h.startsWith('[')) {
        const qsizetype close = h.indexOf(']');
        if (close < 0)
            return false;
        p = h.mid(close + 1);
        h = h.mid(1, close - 1);
        if (!p.isEmpty() && !p.startsWith(':'))
            return false;
        p = p.mid(1);
        if (!h.contains(':'))
            return false;
    } else {
        const qsizetype colon = h.lastIndexOf(':');
        if (colon >= 0) {
            p = h.mid(colon + 1);
            h = h.left(colon);
        }
        if (h.contains(':'))
            return false;
    }
    if (p.isEmpty() && defaultPort == 0)
        return false;
    bool ok = true;
    const uint value = p.isEmpty() ? defaultPort : p.toUInt(&ok);
    if (!ok || value == 0 || value > 65535 || p.size() > 5)
        return false;
    port = quint16(value);
    host = QString::fromLatin1(h);
    return !host.isEmpty();
}

QString shownTarget(const QString &host, quint16 port)
{
    return (host.contains(u':') ? u'[' + host + u']' : host) + u':' + QString::number(port);
}

} // namespace

ProxyConnection::ProxyConnection(EgressProxy *proxy, int fd, EgressClient client,
                                 EgressListener listener, quint16 listenPort)
    : QObject(proxy)
    , m_proxy(proxy)
    , m_client(std::move(client))
    , m_listener(listener)
    , m_listenPort(listenPort)
    , m_clientFd(fd)
{}

ProxyConnection::~ProxyConnection()
{
    close();
}

void ProxyConnection::start()
{
    m_idle.start();
    m_deadline = QDeadlineTimer(m_proxy->limits().headTimeoutMs);
    m_clientWatched = m_proxy->poller()->add(m_clientFd,
                                             m_listener == EgressListener::Forward
                                                 ? 0u
                                                 : uint32_t(EPOLLIN),
                                             [this](uint32_t ev) { onClientEvents(ev); });
    if (!m_clientWatched)
        return close();
    if (m_listener == EgressListener::Forward) {
        // A plain TCP forward of the sandbox's 127.0.0.1:PORT to the host's.
        m_host = QStringLiteral("127.0.0.1");
        m_port = m_listenPort;
        m_tunnel = true;
        return decideName();
    }
}

void ProxyConnection::onClientEvents(uint32_t events)
{
    switch (m_state) {
    case State::Head:
        if (events & EPOLLERR)
            return close();
        return readHead();
    case State::Relaying:
        if (!pump(m_up, m_clientFd, m_upstreamFd) || !pump(m_down, m_upstreamFd, m_clientFd))
            return;
        // A reset client takes nothing more; what it sent before still goes upstream.
        if ((events & EPOLLERR) && !m_down.shut)
            destinationGone(m_down, m_upstreamFd);
        return updateInterest();
    case State::Lingering: {
        char buf[4096];
        const ssize_t n = ::read(m_clientFd, buf, sizeof buf);
        if (n > 0 && (m_lingered += n) < kLingerBytes)
            return;
        if (n < 0 && errno == EAGAIN)
            return;
        return close();
    }
    case State::Resolving:
    case State::Connecting:
        // Nothing is read meanwhile; a client that went away ends the attempt.
        if (events & (EPOLLERR | EPOLLHUP))
            close();
        return;
    case State::Identifying:
        // A client that went away would report it on every wakeup: stop watching it.
        if ((events & (EPOLLERR | EPOLLHUP)) && m_clientWatched) {
            m_proxy->poller()->remove(m_clientFd);
            m_clientWatched = false;
        }
        return;
    case State::Closed:
        return;
    }
}

void ProxyConnection::readHead()
{
    const int max = m_proxy->limits().maxHeadBytes;
    char buf[4096];
    while (m_in.size() <= max) {
        const ssize_t n = ::read(m_clientFd, buf,
                                 size_t(qMin<qsizetype>(sizeof buf, max + 1 - m_in.size())));
        if (n == 0)
            return close(); // the client gave up
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return close();
            break;
        }
        m_in.append(buf, n);
        const qsizetype length = HttpHead::headLength(m_in);
        if (length > 0) {
            m_proxy->poller()->modify(m_clientFd, 0);
            const QByteArray head = m_in.left(length);
            QByteArray rest = m_in.mid(length);
            m_in.clear();
            return handleHead(head, std::move(rest));
        }
    }
    if (m_in.size() > max)
        fail(431, QByteArrayLiteral("the request head is over the limit of ")
                      + QByteArray::number(max) + " bytes");
}

void ProxyConnection::handleHead(const QByteArray &head, QByteArray leftover)
{
    QByteArray why;
    const auto request = HttpHead::parseRequest(head, &why);
    if (!request)
        return fail(400, "malformed request: " + why);
    m_leftover = std::move(leftover);
    if (m_leftover.size() > 1024 * 1024)
        return fail(400, "too much data before the tunnel is open");
    QString host;
    quint16 port = 0;
    if (request->first == "CONNECT") {
        if (!splitAuthority(request->second, 0, host, port))
            return fail(400, "CONNECT wants host:port");
        m_tunnel = true;
    } else {
        const QByteArray &target = request->second;
        if (target.size() > 8 && target.left(8).compare("https://", Qt::CaseInsensitive) == 0)
            return fail(400, "https:// URLs go through CONNECT (set HTTPS_PROXY)");
        if (target.size() <= 7 || target.left(7).compare("http://", Qt::CaseInsensitive) != 0)
            return fail(400, "this is the sandbox's egress proxy: use it as HTTP_PROXY / "
                             "HTTPS_PROXY (absolute http:// URLs or CONNECT)");
        const QByteArray rest = target.mid(7);
        qsizetype end = rest.size();
        for (char c : {'/', '?', '#'}) {
            const qsizetype at = rest.indexOf(c);
            if (at >= 0)
                end = qMin(end, at);
        }
        const QByteArray authority = rest.left(end);
        if (authority.contains('@'))
            return fail(400, "user information in the URL is not forwarded");
        if (!splitAuthority(authority, 80, host, port))
            return fail(400, "a malformed http:// URL");
        QByteArray origin = rest.mid(end);
        if (const qsizetype hash = origin.indexOf('#'); hash >= 0)
            origin.truncate(hash);
        if (origin.isEmpty() || origin.startsWith('?'))
            origin.prepend('/');
        m_request = *request;
        m_request.second = origin;
        m_request.dropHopByHop();
        m_request.set("Host", authority);
    }
    if (const auto literal = parseIpLiteral(host)) {
        m_host = literal->toString();
    } else {
        m_host = normaliseHostName(host);
        if (m_host.isEmpty())
            return fail(400, "'" + host.toLatin1().left(300) + "' is not a host name");
    }
    m_port = port;
    decideName();
}

void ProxyConnection::decideName()
{
    const auto rules = m_proxy->store()->rules(m_client.sandboxId);
    if (!rules)
        return refuse(403, QStringLiteral("the sandbox's network is not set up"));
    const EgressRules::NameStep step = rules->checkName(m_host, m_port);
    if (!step.decision.allowed)
        return refuse(403, step.decision.reason, {}, step.decision.remedy);
    m_nameAllowed = step.nameAllowed;
    m_deadline = QDeadlineTimer(m_proxy->limits().connectTimeoutMs);
    if (const auto literal = parseIpLiteral(m_host))
        return resolved({*literal});
    if (!m_proxy->lookupSlot(m_client.sandboxId, true))
        return fail(503, "too many name lookups in flight for this sandbox");
    m_holdsLookup = true;
    m_state = State::Resolving;
    m_lookupId = m_proxy->resolver()->lookup(m_host, this, [this](Result<QList<QHostAddress>> r) {
        m_lookupId = 0;
        if (m_holdsLookup)
            m_proxy->lookupSlot(m_client.sandboxId, false);
        m_holdsLookup = false;
        if (!r)
            return fail(502, r.error().message.toUtf8());
        resolved(r.value());
    });
}

void ProxyConnection::resolved(const QList<QHostAddress> &addresses)
{
    // The rules as they are now (they may have changed while the name was looked up).
    const auto rules = m_proxy->store()->rules(m_client.sandboxId);
    if (!rules)
        return refuse(403, QStringLiteral("the sandbox's network is not set up"));
    for (const QHostAddress &a : addresses) {
        const EgressDecision d = rules->checkAddress(a, m_port, m_nameAllowed);
        if (d.allowed) {
            const QHostAddress effective = classifyAddress(a).effective;
            if (!m_candidates.contains(effective))
                m_candidates.append(effective);
        } else if (m_firstRefusal.isEmpty()) {
            m_firstRefusal = d.reason;
            m_firstRefusedAddress = classifyAddress(a).effective.toString();
            m_firstRemedy = d.remedy;
            // A public host that is not allowed: allowing the name is the better remedy.
            if (classifyAddress(a).cls == AddressClass::Public && !parseIpLiteral(m_host)
                && !d.remedy.isEmpty())
                m_firstRemedy = m_host + u':' + QString::number(m_port);
        }
    }
    if (m_candidates.isEmpty())
        return refuse(403, m_firstRefusal, m_firstRefusedAddress, m_firstRemedy);
    m_state = State::Connecting;
    connectNext();
}

void ProxyConnection::connectNext()
{
    if (m_upstreamFd >= 0) {
        m_proxy->poller()->remove(m_upstreamFd);
        m_upstreamWatched = false;
        closeFd(m_upstreamFd);
    }
    while (m_nextCandidate < m_candidates.size()) {
        const QHostAddress a = m_candidates.at(m_nextCandidate++);
        sockaddr_storage ss{};
        socklen_t len = 0;
        if (a.protocol() == QAbstractSocket::IPv4Protocol) {
            auto *sin = reinterpret_cast<sockaddr_in *>(&ss);
            sin->sin_family = AF_INET;
            sin->sin_port = htons(m_port);
            sin->sin_addr.s_addr = htonl(a.toIPv4Address());
            len = sizeof(sockaddr_in);
        } else {
            auto *sin6 = reinterpret_cast<sockaddr_in6 *>(&ss);
            sin6->sin6_family = AF_INET6;
            sin6->sin6_port = htons(m_port);
            const Q_IPV6ADDR raw = a.toIPv6Address();
            memcpy(&sin6->sin6_addr, &raw, 16);
            len = sizeof(sockaddr_in6);
        }
        m_upstreamFd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (m_upstreamFd < 0)
            return fail(503, "the engine cannot open a socket: " + QByteArray(strerror(errno)));
        if (::connect(m_upstreamFd, reinterpret_cast<sockaddr *>(&ss), len) == 0)
            return onConnected();
        if (errno == EINPROGRESS) {
            m_upstreamWatched = m_proxy->poller()->add(m_upstreamFd, EPOLLOUT, [this](uint32_t ev) {
                onUpstreamEvents(ev);
            });
            if (!m_upstreamWatched)
                return fail(503, "the engine cannot watch a socket");
            return;
        }
        m_firstRefusal = QString::fromLocal8Bit(strerror(errno));
        closeFd(m_upstreamFd);
    }
    fail(502, "cannot connect to " + shownTarget(m_host, m_port).toUtf8()
                  + (m_firstRefusal.isEmpty() ? QByteArray() : ": " + m_firstRefusal.toUtf8()));
}

void ProxyConnection::onUpstreamEvents(uint32_t events)
{
    if (m_state == State::Connecting) {
        int error = 0;
        socklen_t len = sizeof error;
        if (::getsockopt(m_upstreamFd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
            error = errno;
        if (error == 0 && !(events & EPOLLERR))
            return onConnected();
        m_firstRefusal = QString::fromLocal8Bit(strerror(error ? error : ECONNREFUSED));
        return connectNext();
    }
    if (m_state != State::Relaying)
        return;
    if (!pump(m_down, m_upstreamFd, m_clientFd) || !pump(m_up, m_clientFd, m_upstreamFd))
        return;
    // A reset upstream takes nothing more; what it sent before still reaches the client.
    if ((events & EPOLLERR) && !m_up.shut)
        destinationGone(m_up, m_clientFd);
    updateInterest();
}

void ProxyConnection::onConnected()
{
    const int one = 1;
    ::setsockopt(m_upstreamFd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(m_clientFd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    m_state = State::Relaying;
    m_deadline = QDeadlineTimer(QDeadlineTimer::Forever);
    m_idle.restart();
    if (m_listener == EgressListener::Forward) {
        // nothing to say: bytes flow as they come
    } else if (m_tunnel) {
        m_down.prefix = QByteArrayLiteral("HTTP/1.1 200 Connection established\r\n\r\n");
        m_up.prefix = std::move(m_leftover);
    } else {
        m_up.prefix = m_request.serializeRequest() + m_leftover;
        m_down.readHead = true;
    }
    m_leftover.clear();
    startRelay();
}

void ProxyConnection::startRelay()
{
    for (Direction *d : {&m_up, &m_down}) {
        if (::pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) != 0)
            return fail(503, "the engine is out of pipes");
        // The kernel may grant less than asked (a normal user past the per-user pipe limit gets
        // one page): reading more than the pipe holds would leave the source readable and the
        // poller spinning, so the cap is what was granted.
        ::fcntl(d->pipe[1], F_SETPIPE_SZ, m_proxy->limits().pipeBytes);
        const int granted = ::fcntl(d->pipe[1], F_GETPIPE_SZ);
        if (granted <= 0)
            return fail(503, "the engine cannot size a pipe");
        d->capacity = size_t(granted);
    }
    if (!m_upstreamWatched)
        m_upstreamWatched = m_proxy->poller()->add(m_upstreamFd, 0,
                                                   [this](uint32_t ev) { onUpstreamEvents(ev); });
    if (!m_upstreamWatched)
        return fail(503, "the engine cannot watch a socket");
    if (!pump(m_up, m_clientFd, m_upstreamFd) || !pump(m_down, m_upstreamFd, m_clientFd))
        return;
    updateInterest();
}

bool ProxyConnection::wantsRead(const Direction &d) const
{
    return !d.eof && (d.readHead || d.buffered < d.capacity);
}

bool ProxyConnection::wantsWrite(const Direction &d) const
{
    return d.prefixPos < d.prefix.size() || d.buffered > 0;
}

bool ProxyConnection::pump(Direction &d, int src, int dst)
{
    const size_t cap = d.capacity;
    for (int round = 0; round < kPumpRounds; ++round) {
        bool progress = false;
        if (d.prefixPos < d.prefix.size()) {
            const ssize_t n = ::send(dst, d.prefix.constData() + d.prefixPos,
                                     size_t(d.prefix.size() - d.prefixPos), MSG_NOSIGNAL);
            if (n > 0) {
                d.prefixPos += n;
                progress = true;
                if (d.prefixPos == d.prefix.size()) {
                    d.prefix.clear();
                    d.prefixPos = 0;
                }
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                destinationGone(d, src);
                break;
            }
        }
        if (d.readHead) {
            char buf[4096];
            const ssize_t n = ::read(src, buf, sizeof buf);
            if (n > 0) {
                d.head.append(buf, n);
                progress = true;
                const qsizetype length = HttpHead::headLength(d.head);
                if (length > 0) {
                    auto response = HttpHead::parseResponse(QByteArrayView(d.head).first(length));
                    if (!response) {
                        close();
                        return false;
                    }
                    const QByteArray rest = d.head.mid(length);
                    const int code = response->second.toInt();
                    if (code >= 100 && code < 200) {
                        // An interim response goes as it is; the final one follows.
                        d.prefix += d.head.left(length);
                        d.head = rest;
                    } else {
                        response->dropHopByHop();
                        d.prefix += response->serializeResponse() + rest;
                        d.head.clear();
                        d.readHead = false;
                    }
                } else if (d.head.size() > kMaxResponseHeadBytes) {
                    close();
                    return false;
                }
            } else if (n == 0) {
                d.prefix += std::exchange(d.head, {});
                d.readHead = false;
                d.eof = true;
                progress = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                close();
                return false;
            }
        } else if (d.prefixPos == 0 && d.prefix.isEmpty()) {
            if (d.buffered > 0) {
                const ssize_t n = ::splice(d.pipe[0], nullptr, dst, nullptr, d.buffered,
                                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                    d.buffered -= size_t(n);
                    progress = true;
                } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    destinationGone(d, src);
                    break;
                }
            }
            if (!d.eof && d.buffered < cap) {
                const ssize_t n = ::splice(src, nullptr, d.pipe[1], nullptr, cap - d.buffered,
                                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (n > 0) {
                    d.buffered += size_t(n);
                    progress = true;
                } else if (n == 0 || errno == ECONNRESET || errno == EPIPE) {
                    // The source ended (a reset is an end too): what is buffered still goes.
                    d.eof = true;
                    progress = true;
                } else if (errno != EAGAIN && errno != EINTR) {
                    close();
                    return false;
                }
            }
        }
        if (d.eof && !d.readHead && d.buffered == 0 && d.prefix.isEmpty() && !d.shut) {
            ::shutdown(dst, SHUT_WR);
            d.shut = true;
        }
        if (progress)
            m_idle.restart();
        else
            break;
    }
    return true;
}

void ProxyConnection::destinationGone(Direction &d, int src)
{
    // The destination cannot take more (it closed, or reset): this direction is over and what
    // it buffered is dropped, but the other one goes on until it has delivered everything the
    // peer sent before it went (a server that answers and closes without reading the request).
    d.buffered = 0;
    d.prefix.clear();
    d.prefixPos = 0;
    d.readHead = false;
    d.eof = true;
    d.shut = true;
    ::shutdown(src, SHUT_RD);
}

void ProxyConnection::updateInterest()
{
    if (m_state != State::Relaying)
        return;
    if (m_up.shut && m_down.shut)
        return close();
    const uint32_t in = EPOLLIN, out = EPOLLOUT;
    const uint32_t clientEvents = (wantsRead(m_up) ? in : 0u) | (wantsWrite(m_down) ? out : 0u);
    const uint32_t upstreamEvents = (wantsRead(m_down) ? in : 0u) | (wantsWrite(m_up) ? out : 0u);
    // An fd that is done both ways would report its hang-up forever: stop watching it.
    if (m_clientWatched) {
        if (m_up.eof && m_down.shut) {
            m_proxy->poller()->remove(m_clientFd);
            m_clientWatched = false;
        } else {
            m_proxy->poller()->modify(m_clientFd, clientEvents);
        }
    }
    if (m_upstreamWatched) {
        if (m_down.eof && m_up.shut) {
            m_proxy->poller()->remove(m_upstreamFd);
            m_upstreamWatched = false;
        } else {
            m_proxy->poller()->modify(m_upstreamFd, upstreamEvents);
        }
    }
    if (!m_clientWatched && !m_upstreamWatched)
        close();
}

void ProxyConnection::deny(const QString &reason, const QString &address, const QString &remedy,
                           std::function<void()> then)
{
    DenyRecord r;
    r.time = QDateTime::currentDateTimeUtc();
    r.host = m_host;
    r.port = m_port;
    r.address = address;
    r.reason = reason;
    r.pid = m_client.pid;
    r.process = m_client.process;
    r.via = m_listener == EgressListener::Forward ? QStringLiteral("forward")
                                                  : QStringLiteral("proxy");
    r.allowWith = remedy;
    // Reported even when the connection is gone by the time its process is known.
    m_proxy->reportIdentified(m_client, std::move(r), std::move(then));
}

void ProxyConnection::refuse(int status, const QString &reason, const QString &address,
                             const QString &remedy)
{
    if (m_state == State::Closed || m_state == State::Lingering || m_state == State::Identifying)
        return;
    m_state = State::Identifying;
    const QByteArray message = "sandbox egress: " + shownTarget(m_host, m_port).toUtf8()
                               + " denied: " + reason.toUtf8();
    QPointer<ProxyConnection> self(this);
    deny(reason, address, remedy, [self, status, message] {
        if (self)
            self->fail(status, message);
    });
}

void ProxyConnection::fail(int status, const QByteArray &message)
{
    if (m_state == State::Closed || m_state == State::Lingering)
        return;
    if (m_state == State::Relaying || m_listener == EgressListener::Forward) {
        // Bytes may have flowed already (or the client speaks no HTTP): just end it.
        return close();
    }
    const QByteArray body = message + '\n';
    QByteArray response = "HTTP/1.1 " + QByteArray::number(status) + ' '
                          + Http::reasonPhrase(status)
                          + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
                          + QByteArray::number(body.size()) + "\r\nConnection: close\r\n";
    if (status == 403)
        response += "X-Sandbox-Egress: denied\r\n";
    response += "\r\n" + body;
    (void)!::send(m_clientFd, response.constData(), size_t(response.size()),
                  MSG_NOSIGNAL | MSG_DONTWAIT);
    linger();
}

void ProxyConnection::linger()
{
    // Closing with unread input would reset the connection and lose the answer: shut our side,
    // read (and drop) what the client still sends, briefly, then close.
    if (m_upstreamFd >= 0) {
        if (m_upstreamWatched)
            m_proxy->poller()->remove(m_upstreamFd);
        m_upstreamWatched = false;
        closeFd(m_upstreamFd);
    }
    if (m_holdsLookup) {
        m_proxy->lookupSlot(m_client.sandboxId, false);
        m_holdsLookup = false;
    }
    if (m_lookupId) {
        m_proxy->resolver()->cancel(m_lookupId);
        m_lookupId = 0;
    }
    m_state = State::Lingering;
    m_deadline = QDeadlineTimer(kLingerMs);
    ::shutdown(m_clientFd, SHUT_WR);
    if (m_clientWatched)
        m_proxy->poller()->modify(m_clientFd, EPOLLIN);
}

void ProxyConnection::checkDeadline()
{
    switch (m_state) {
    case State::Relaying:
        // Half closed (one side is done, the other never ends): not for long.
        if (m_idle.hasExpired(m_up.shut || m_down.shut
                                  ? qMin(kHalfClosedIdleMs, m_proxy->limits().idleTimeoutMs)
                                  : m_proxy->limits().idleTimeoutMs))
            close();
        return;
    case State::Head:
        if (m_deadline.hasExpired())
            fail(408, "no complete request head in time");
        return;
    case State::Resolving:
    case State::Connecting:
        if (m_deadline.hasExpired())
            fail(504, "timed out connecting to " + shownTarget(m_host, m_port).toUtf8());
        return;
    case State::Lingering:
        if (m_deadline.hasExpired())
            close();
        return;
    case State::Identifying: // EgressProxy::identify answers within its timeout
    case State::Closed:
        return;
    }
}

void ProxyConnection::close()
{
    if (m_state == State::Closed)
        return;
    m_state = State::Closed;
    if (m_lookupId) {
        m_proxy->resolver()->cancel(m_lookupId);
        m_lookupId = 0;
    }
    if (m_holdsLookup) {
        m_proxy->lookupSlot(m_client.sandboxId, false);
        m_holdsLookup = false;
    }
    for (int *fd : {&m_clientFd, &m_upstreamFd}) {
        if (*fd >= 0)
            m_proxy->poller()->remove(*fd);
        closeFd(*fd);
    }
    m_clientWatched = m_upstreamWatched = false;
    for (Direction *d : {&m_up, &m_down}) {
        closeFd(d->pipe[0]);
        closeFd(d->pipe[1]);
    }
    m_proxy->release(this);
}

} // namespace Sandbox::Engine
