#include "backgroundops.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

using nlohmann::json;

namespace {

// Closes every descriptor from 3 up but `a` and `b`.
void closeAllBut(int a, int b)
{
    if (a < 3)
        a = b;
    if (a > b)
        std::swap(a, b);
    auto closeRange = [](int from, int to) {
        if (from <= to)
            ::syscall(SYS_close_range, unsigned(from), unsigned(to), 0);
    };
    closeRange(3, a - 1);
    closeRange(a + 1, b - 1);
    closeRange(b + 1, ~0U >> 1);
}

void writeAll(int fd, const std::string &s)
{
    size_t done = 0;
    while (done < s.size()) {
        const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        done += size_t(n);
    }
}

} // namespace

BackgroundOps::BackgroundOps(Send send)
    : m_send(std::move(send))
{}

BackgroundOps::~BackgroundOps()
{
    for (auto &[id, op] : m_ops) {
        ::kill(op.pid, SIGKILL);
        ::close(op.fd);
    }
}

void BackgroundOps::start(uint32_t id, Work work)
{
    auto refuse = [&](int err, const std::string &why) {
        if (work.keepFd >= 0)
            ::close(work.keepFd);
        m_send(id, Reply::error("file_error", why, err));
    };
    if (m_ops.size() >= kMaxRunning)
        return refuse(EBUSY, "too many long file operations at once; try again when one is done");
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC) != 0)
        return refuse(errno, std::string("cannot start the operation: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(pipeFds[0]);
        ::close(pipeFds[1]);
        return refuse(errno, std::string("cannot start the operation: ") + std::strerror(errno));
    }
    if (pid == 0) {
        // The child: it works, reports one JSON object, and is gone.
        ::close(pipeFds[0]);
        closeAllBut(work.keepFd, pipeFds[1]);
        Reply r;
        try {
            r = work.run(work.keepFd);
        } catch (const RequestError &e) {
            r = e.reply();
        } catch (const std::exception &e) {
            r = Reply::error("file_error", std::string("internal error: ") + e.what());
        }
        writeAll(pipeFds[1], r.body.dump(-1, ' ', false, json::error_handler_t::replace));
        ::_exit(0);
    }
    ::close(pipeFds[1]);
    if (work.keepFd >= 0)
        ::close(work.keepFd);
    ::fcntl(pipeFds[0], F_SETFL, O_NONBLOCK);
    m_ops[id] = Op{pid, pipeFds[0], {}};
}

void BackgroundOps::collectPollFds(std::vector<pollfd> &fds)
{
    m_slots.clear();
    for (const auto &[id, op] : m_ops) {
        m_slots.emplace_back(fds.size(), id);
        fds.push_back({op.fd, POLLIN, 0});
    }
}

void BackgroundOps::process(const std::vector<pollfd> &fds)
{
    for (const auto &[index, id] : m_slots) {
        if (index >= fds.size() || fds[index].revents == 0)
            continue;
        const auto it = m_ops.find(id);
        if (it == m_ops.end())
            continue;
        Op &op = it->second;
        char buf[65536];
        for (;;) {
            const ssize_t n = ::read(op.fd, buf, sizeof buf);
            if (n > 0) {
                if (op.answer.size() + size_t(n) > kMaxAnswer) {
                    op.answer.clear();
                    ::kill(op.pid, SIGKILL);
                    finish(id, op);
                    m_ops.erase(it);
                    break;
                }
                op.answer.append(buf, size_t(n));
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                break;
            finish(id, op); // end of the child's report (its exit is reaped with the others)
            m_ops.erase(it);
            break;
        }
    }
    m_slots.clear();
}

void BackgroundOps::finish(uint32_t id, Op &op)
{
    ::close(op.fd);
    Reply r;
    const json body = json::parse(op.answer, nullptr, false);
    if (body.is_object())
        r.body = body;
    else
        r = Reply::error("file_error", "the operation ended without an answer");
    m_send(id, r);
}
