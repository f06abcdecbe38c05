// sandbox-dbhost: runs inside a database sandbox and serves one SQLite or DuckDB database to the
// engine over a unix socket, one JSON object per line (see PROTOCOL.md). The engine never opens
// a user's database file itself: the code that reads it runs here, as the sandbox's uid.

#include "backend.h"
#include "sqlitebackend.h"
#ifdef SANDBOX_DBHOST_DUCKDB
#include "duckdbbackend.h"
#endif

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

using namespace DbHost;

namespace {

constexpr size_t kMaxLine = 64u << 20;
constexpr size_t kMaxPageRows = 100000;
constexpr size_t kMaxPageBytes = 12u << 20;
constexpr size_t kMaxTransactionRows = 10000;
constexpr size_t kMaxTransactionBytes = 8 * 1024 * 1024; // a page's (PageLimits::kMaxBytes)

int usage()
{
    std::fprintf(stderr,
                 "usage: sandbox-dbhost --engine sqlite|duckdb --database FILE --socket PATH "
                 "[--memory-limit-mb N] [--threads N] [--allow-remote URL_PREFIX]... [--spare]\n");
    return 2;
}

// Writes `parts` one after the other, gathered into as few system calls as the socket takes.
bool sendAll(int fd, std::initializer_list<std::string_view> parts)
{
    std::vector<iovec> left;
    for (std::string_view p : parts)
        if (!p.empty())
            left.push_back(iovec{const_cast<char *>(p.data()), p.size()});
    size_t first = 0;
    while (first < left.size()) {
        msghdr msg{};
        msg.msg_iov = left.data() + first;
        msg.msg_iovlen = left.size() - first;
        ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        for (; first < left.size() && size_t(n) >= left[first].iov_len; ++first)
            n -= ssize_t(left[first].iov_len);
        if (first < left.size()) {
            left[first].iov_base = static_cast<char *>(left[first].iov_base) + n;
            left[first].iov_len -= size_t(n);
        }
    }
    return true;
}

// An answer line, a page's rows sent from where they were written (wire.h: answerLine).
bool sendAnswer(int fd, const json &answer)
{
    const AnswerLine line = answerLine(answer);
    return sendAll(fd, {line.head, line.rows, line.tail});
}

json errorAnswer(const DbError &e)
{
    json err{{"code", e.code}, {"message", clippedMessage(e.message)}};
    if (e.offset >= 0)
        err["offset"] = e.offset;
    if (e.line > 0)
        err["line"] = e.line;
    if (e.column > 0)
        err["column"] = e.column;
    if (e.statementIndex >= 0)
        err["statementIndex"] = e.statementIndex;
    return json{{"error", err}};
}

PageLimits limitsOf(const json &req)
{
    PageLimits l;
    if (req.contains("pageSize") && req["pageSize"].is_number_unsigned())
        l.rows = std::clamp<size_t>(req["pageSize"].get<size_t>(), 1, kMaxPageRows);
    if (req.contains("pageBytes") && req["pageBytes"].is_number_unsigned())
        l.bytes = std::clamp<size_t>(req["pageBytes"].get<size_t>(), 1024, kMaxPageBytes);
    return l;
}

std::string stringField(const json &req, const char *name)
{
    const auto it = req.find(name);
    if (it == req.end() || !it->is_string())
        throw DbError{"bad_request", std::string("'") + name + "' must be a string"};
    return it->get<std::string>();
}

// What the process was started with: how it opens a database.
struct Options
{
    std::string engine;
    long long memoryMb = 1024;       // DuckDB only
    int threads = 1;                 // DuckDB only
    std::vector<std::string> remote; // DuckDB only: URL prefixes it may read
};

// A database in a subdirectory of /workspace ("data/app.db"): makes the directory.
void makeParents(const std::string &path)
{
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1))
        ::mkdir(path.substr(0, slash).c_str(), 0700);
}

// A query through the path every user query takes, run once before the host accepts: a
// database's first statement pays for what its engine sets up on first use (DuckDB: 5-6 ms of
// a first `SELECT 1`, then 0.2-0.5 ms; SQLite: about 1 ms), and a warm spare pays it before a
// create takes it instead of in the create's first query.
void warm(Backend &backend)
{
    try {
        (void)backend.query(0, "SELECT 1", json::array(), false, PageLimits{}, std::string());
    } catch (const std::exception &) {
        // Nothing to warm: the first user query pays, and says what is wrong.
    }
}

std::unique_ptr<Backend> warmed(std::unique_ptr<Backend> backend)
{
    warm(*backend);
    return backend;
}

// Opens (creating it if needed) the database at `path`; null and `error` when it cannot.
std::unique_ptr<Backend> openBackend(const Options &o, const std::string &path, std::string *error)
{
    makeParents(path);
    if (o.engine == "sqlite") {
        auto b = std::make_unique<SqliteBackend>(path);
        return b->open(error) ? warmed(std::move(b)) : nullptr;
    }
#ifdef SANDBOX_DBHOST_DUCKDB
    if (o.engine == "duckdb") {
        auto b = std::make_unique<DuckdbBackend>(path, std::max(64LL, o.memoryMb),
                                                 std::max(1, o.threads), o.remote);
        return b->open(error) ? warmed(std::move(b)) : nullptr;
    }
#endif
    *error = "engine '" + o.engine + "' is not built in";
    return nullptr;
}

// The database this process serves. A spare's (--spare) may still be moved, once, by `adopt`
// before any other request; from the first other request on it is fixed.
class Host
{
public:
    Host(Options options, std::unique_ptr<Backend> backend, std::string path, bool spare)
        : m_options(std::move(options))
        , m_backend(std::move(backend))
        , m_path(std::move(path))
        , m_spare(spare)
    {}

    // The backend for a request: from now on it never changes.
    Backend &serving()
    {
        std::lock_guard l(m_mutex);
        m_spare = false;
        return *m_backend;
    }

    // A connection's thread, accepted while the host is a spare (the connections the engine opens
    // as it starts one), runs the warming query too: the create that takes the spare sends its
    // first query on such a thread, and a thread's first DuckDB query pays for the thread's first
    // use (its malloc arena, DuckDB's per-thread state: 0.1-0.3 ms here; SQLite showed none).
    void warmThisThread()
    {
        std::lock_guard l(m_mutex);
        if (m_spare)
            warm(*m_backend);
    }

    // The spare's database becomes `path`: closed (everything in its file, no -wal left), its
    // file moved there and opened again. Nothing else runs meanwhile: no other request came yet,
    // and those that come now wait for the lock.
    json adopt(const std::string &path)
    {
        std::lock_guard l(m_mutex);
        if (!std::exchange(m_spare, false))
            throw DbError{"bad_request", "'adopt' only on a spare, before any other request"};
        if (path.rfind("/workspace/", 0) != 0 || path.find("/..") != std::string::npos)
            throw DbError{"bad_request", "'database' must be a file in /workspace"};
        if (path == m_path)
            return json{{"database", path}};
        m_backend.reset();
        // Through a name of its own: the new path may lie below the old one ("main.db/x.db").
        const std::string moving = "/workspace/.sandbox-dbhost-adopt";
        std::string error;
        if (::rename(m_path.c_str(), moving.c_str()) != 0)
            error = "cannot move " + m_path + ": " + std::strerror(errno);
        else if (makeParents(path); ::rename(moving.c_str(), path.c_str()) != 0)
            error = "cannot move " + m_path + " to " + path + ": " + std::strerror(errno);
        else
            m_backend = openBackend(m_options, path, &error);
        if (!m_backend) {
            // No database to serve any more: the engine sees the process end.
            std::fprintf(stderr, "sandbox-dbhost: cannot open %s: %s\n", path.c_str(),
                         error.c_str());
            std::fflush(stderr);
            ::_exit(1);
        }
        m_path = path;
        return json{{"database", path}};
    }

private:
    const Options m_options;
    std::mutex m_mutex;
    std::unique_ptr<Backend> m_backend;
    std::string m_path;
    bool m_spare;
};

json handle(Backend &backend, const json &req, uint64_t id)
{
    const std::string op = stringField(req, "op");
    if (op == "query" || op == "execute") {
        const json params = req.value("params", json::array());
        if (!params.is_array())
            throw DbError{"bad_request", "'params' must be an array"};
        const std::string transaction = req.contains("transaction")
                                            ? stringField(req, "transaction")
                                            : std::string();
        return backend.query(id, stringField(req, "sql"), params, op == "execute", limitsOf(req),
                             transaction);
    }
    if (op == "begin")
        return backend.begin(stringField(req, "transaction"));
    if (op == "commit" || op == "rollback")
        return backend.finish(stringField(req, "transaction"), op == "commit");
    if (op == "fetch")
        return backend.fetch(id, stringField(req, "cursor"), limitsOf(req));
    if (op == "close")
        return json{{"closed", backend.closeCursor(stringField(req, "cursor"))}};
    if (op == "cancel") {
        if (!req.contains("target") || !req["target"].is_number_unsigned())
            throw DbError{"bad_request", "'target' must be a request id"};
        return json{{"cancelled", backend.cancel(req["target"].get<uint64_t>())}};
    }
    if (op == "transaction") {
        const json statements = req.value("statements", json());
        if (!statements.is_array() || statements.empty())
            throw DbError{"bad_request", "'statements' must be a non-empty array"};
        size_t maxRows = 1000;
        if (req.contains("maxRows") && req["maxRows"].is_number_unsigned())
            maxRows = std::min<size_t>(req["maxRows"].get<size_t>(), kMaxTransactionRows);
        size_t maxBytes = kMaxTransactionBytes;
        if (req.contains("maxBytes") && req["maxBytes"].is_number_unsigned())
            maxBytes = std::min<size_t>(req["maxBytes"].get<size_t>(), kMaxTransactionBytes);
        return backend.transaction(id, statements, maxRows, maxBytes);
    }
    if (op == "export")
        return backend.exportFile(id, stringField(req, "sql"), stringField(req, "format"),
                                  stringField(req, "path"));
    if (op == "ping")
        return json{{"engine", backend.engineName()}, {"version", backend.version()}};
    if (op == "shutdown") {
        std::fprintf(stderr, "sandbox-dbhost: shutting down\n");
        std::fflush(stderr);
        ::_exit(0);
    }
    throw DbError{"bad_request", "unknown op '" + op + "'"};
}

void serve(Host *host, int fd)
{
    host->warmThisThread();
    std::string buffer;
    char chunk[65536];
    while (true) {
        size_t nl;
        while ((nl = buffer.find('\n')) == std::string::npos) {
            if (buffer.size() > kMaxLine) {
                sendAnswer(fd, errorAnswer(DbError{"too_large", "a request line is over 64 MiB"}));
                ::close(fd);
                return;
            }
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                ::close(fd);
                return;
            }
            buffer.append(chunk, size_t(n));
        }
        const std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.empty())
            continue;
        json answer;
        json id = nullptr;
        try {
            const json req = json::parse(line);
            if (!req.is_object() || !req.contains("id") || !req["id"].is_number_unsigned())
                throw DbError{"bad_request", "a request is an object with a numeric 'id'"};
            id = req["id"];
            answer = req.value("op", json()) == "adopt"
                         ? host->adopt(stringField(req, "database"))
                         : handle(host->serving(), req, id.get<uint64_t>());
        } catch (const DbError &e) {
            DbError explained = e;
            host->serving().explain(explained);
            answer = errorAnswer(explained);
        } catch (const json::exception &e) {
            answer = errorAnswer(DbError{"bad_request", std::string("bad request: ") + e.what()});
        } catch (const std::exception &e) {
            answer = errorAnswer(DbError{"internal", e.what()});
        }
        answer["id"] = id;
        if (!sendAnswer(fd, answer)) {
            ::close(fd);
            return;
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    Options options;
    std::string database, socketPath;
    bool spare = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
        if (arg == "--engine")
            options.engine = next();
        else if (arg == "--database")
            database = next();
        else if (arg == "--socket")
            socketPath = next();
        else if (arg == "--memory-limit-mb")
            options.memoryMb = std::atoll(next().c_str());
        else if (arg == "--threads")
            options.threads = std::atoi(next().c_str());
        else if (arg == "--allow-remote")
            options.remote.push_back(next());
        else if (arg == "--spare")
            spare = true;
        else
            return usage();
    }
    if (options.engine.empty() || database.empty() || socketPath.empty())
        return usage();
    if (options.engine != "sqlite"
#ifdef SANDBOX_DBHOST_DUCKDB
        && options.engine != "duckdb"
#endif
    ) {
        std::fprintf(stderr, "sandbox-dbhost: engine '%s' is not built in\n",
                     options.engine.c_str());
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN);
    ::umask(077);

    std::string error;
    std::unique_ptr<Backend> backend = openBackend(options, database, &error);
    if (!backend) {
        std::fprintf(stderr, "sandbox-dbhost: cannot open %s: %s\n", database.c_str(),
                     error.c_str());
        return 1;
    }
    const std::string version = backend->version();
    Host host(options, std::move(backend), database, spare);

    const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (listener < 0 || socketPath.size() >= sizeof addr.sun_path) {
        std::fprintf(stderr, "sandbox-dbhost: bad socket path\n");
        return 1;
    }
    std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size() + 1);
    const std::string temp = socketPath + ".new";
    sockaddr_un tempAddr = addr;
    std::memcpy(tempAddr.sun_path, temp.c_str(),
                std::min(temp.size() + 1, sizeof tempAddr.sun_path - 1));
    ::unlink(temp.c_str());
    // Bound under a temporary name and renamed: the engine never sees a socket that does not
    // accept yet.
    if (::bind(listener, reinterpret_cast<sockaddr *>(&tempAddr), sizeof tempAddr) != 0
        || ::listen(listener, 64) != 0 || ::rename(temp.c_str(), socketPath.c_str()) != 0) {
        std::fprintf(stderr, "sandbox-dbhost: cannot listen on %s: %s\n", socketPath.c_str(),
                     std::strerror(errno));
        return 1;
    }
    std::fprintf(stderr, "sandbox-dbhost: %s %s ready on %s%s\n", options.engine.c_str(),
                 version.c_str(), socketPath.c_str(), spare ? " (a spare)" : "");
    std::fflush(stderr);
    while (true) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            std::fprintf(stderr, "sandbox-dbhost: accept: %s\n", std::strerror(errno));
            return 1;
        }
        std::thread(serve, &host, fd).detach();
    }
}
