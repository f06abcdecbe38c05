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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using namespace DbHost;

namespace {

constexpr size_t kMaxLine = 64u << 20;
constexpr size_t kMaxPageRows = 100000;
constexpr size_t kMaxPageBytes = 12u << 20;
constexpr size_t kMaxTransactionRows = 10000;

int usage()
{
    std::fprintf(stderr,
                 "usage: sandbox-dbhost --engine sqlite|duckdb --database FILE --socket PATH "
                 "[--memory-limit-mb N] [--threads N] [--allow-remote URL_PREFIX]...\n");
    return 2;
}

bool sendAll(int fd, const std::string &data)
{
    size_t off = 0;
    while (off < data.size()) {
        const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        off += size_t(n);
    }
    return true;
}

json errorAnswer(const DbError &e)
{
    json err{{"code", e.code}, {"message", e.message}};
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
        return backend.transaction(id, statements, maxRows);
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

void serve(Backend *backend, int fd)
{
    std::string buffer;
    char chunk[65536];
    while (true) {
        size_t nl;
        while ((nl = buffer.find('\n')) == std::string::npos) {
            if (buffer.size() > kMaxLine) {
                sendAll(fd, errorAnswer(DbError{"too_large", "a request line is over 64 MiB"}).dump()
                                + "\n");
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
            answer = handle(*backend, req, id.get<uint64_t>());
        } catch (const DbError &e) {
            DbError explained = e;
            backend->explain(explained);
            answer = errorAnswer(explained);
        } catch (const json::exception &e) {
            answer = errorAnswer(DbError{"bad_request", std::string("bad request: ") + e.what()});
        } catch (const std::exception &e) {
            answer = errorAnswer(DbError{"internal", e.what()});
        }
        answer["id"] = id;
        if (!sendAll(fd, dumpAnswer(answer) + "\n")) {
            ::close(fd);
            return;
        }
    }
}

} // namespace

int main(int argc, char **argv)
{
    std::string engine, database, socketPath;
    [[maybe_unused]] long long memoryMb = 1024;       // DuckDB only
    [[maybe_unused]] int threads = 1;                 // DuckDB only
    [[maybe_unused]] std::vector<std::string> remote; // DuckDB only: URL prefixes it may read
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
        if (arg == "--engine")
            engine = next();
        else if (arg == "--database")
            database = next();
        else if (arg == "--socket")
            socketPath = next();
        else if (arg == "--memory-limit-mb")
            memoryMb = std::atoll(next().c_str());
        else if (arg == "--threads")
            threads = std::atoi(next().c_str());
        else if (arg == "--allow-remote")
            remote.push_back(next());
        else
            return usage();
    }
    if (engine.empty() || database.empty() || socketPath.empty())
        return usage();
#ifndef SANDBOX_DBHOST_DUCKDB
    (void)memoryMb, (void)threads, (void)remote; // DuckDB's settings
#endif
    std::signal(SIGPIPE, SIG_IGN);
    ::umask(077);

    // A database in a subdirectory of /workspace ("data/app.db"): make the directory.
    for (size_t slash = database.find('/', 1); slash != std::string::npos;
         slash = database.find('/', slash + 1))
        ::mkdir(database.substr(0, slash).c_str(), 0700);

    std::unique_ptr<Backend> backend;
    std::string error;
    if (engine == "sqlite") {
        auto b = std::make_unique<SqliteBackend>(database);
        if (!b->open(&error)) {
            std::fprintf(stderr, "sandbox-dbhost: cannot open %s: %s\n", database.c_str(),
                         error.c_str());
            return 1;
        }
        backend = std::move(b);
#ifdef SANDBOX_DBHOST_DUCKDB
    } else if (engine == "duckdb") {
        auto b = std::make_unique<DuckdbBackend>(database, std::max(64LL, memoryMb),
                                                 std::max(1, threads), remote);
        if (!b->open(&error)) {
            std::fprintf(stderr, "sandbox-dbhost: cannot open %s: %s\n", database.c_str(),
                         error.c_str());
            return 1;
        }
        backend = std::move(b);
#endif
    } else {
        std::fprintf(stderr, "sandbox-dbhost: engine '%s' is not built in\n", engine.c_str());
        return 2;
    }

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
    std::fprintf(stderr, "sandbox-dbhost: %s %s ready on %s\n", engine.c_str(),
                 backend->version().c_str(), socketPath.c_str());
    std::fflush(stderr);
    while (true) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            std::fprintf(stderr, "sandbox-dbhost: accept: %s\n", std::strerror(errno));
            return 1;
        }
        std::thread(serve, backend.get(), fd).detach();
    }
}
