#include "childprocess.h"

#include "egress/fdpoller.h"

#include <QFile>
#include <QLoggingCategory>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

Q_LOGGING_CATEGORY(lcChild, "sandboxd.child")

namespace Sandbox::Engine {

namespace {

QString errnoText(int error)
{
    return QString::fromLocal8Bit(std::strerror(error));
}

// A NULL-terminated array of C strings over `strings` (which must outlive it).
std::vector<char *> pointers(std::vector<QByteArray> &strings)
{
    std::vector<char *> out;
    out.reserve(strings.size() + 1);
    for (QByteArray &s : strings)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

} // namespace

ChildProcess::ChildProcess(FdPoller *poller, QObject *parent)
    : QObject(parent)
    , m_poller(poller ? poller : new FdPoller(this))
{}

ChildProcess::~ChildProcess()
{
    if (m_pid <= 0)
        return;
    if (m_poller && m_pidfd.isValid())
        m_poller->remove(m_pidfd.get());
    ::kill(m_pid, SIGKILL);
    if (!reap(1000))
        qCWarning(lcChild) << "process" << m_pid << "did not end within a second of SIGKILL";
}

Result<bool> ChildProcess::start(const Spec &spec)
{
    if (m_pid > 0 || m_pidfd.isValid())
        return Error{ErrorCode::InternalError,
                     QStringLiteral("the process was started already"),
                     {}};
    // Everything the child needs is made here: after fork() it may only make system calls.
    std::vector<QByteArray> argv{QFile::encodeName(spec.program)};
    for (const QString &a : spec.arguments)
        argv.push_back(a.toLocal8Bit());
    std::vector<QByteArray> envp;
    for (const QString &e : spec.environment)
        envp.push_back(e.toLocal8Bit());
    std::vector<char *> argvp = pointers(argv);
    std::vector<char *> envpp = pointers(envp);
    const QByteArray cwd = QFile::encodeName(spec.workingDirectory);
    const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    int report[2];
    if (!null.isValid() || ::pipe2(report, O_CLOEXEC) != 0)
        return Error{ErrorCode::SandboxError, errnoText(errno), {}};
    UniqueFd reportRead(report[0]);
    UniqueFd reportWrite(report[1]);

    const pid_t pid = ::fork();
    if (pid < 0)
        return Error{ErrorCode::SandboxError, errnoText(errno), {}};
    if (pid == 0) {
        // The child: the engine's signal handling does not carry over.
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::signal(SIGPIPE, SIG_DFL);
        // Out of the modifier's way (it places descriptors at 2 and up).
        const int out = ::fcntl(reportWrite.get(), F_DUPFD_CLOEXEC, 64);
        auto fail = [out](int error) {
            (void)!::write(out, &error, sizeof error);
            ::_exit(127);
        };
        if (out < 0 || ::dup2(null.get(), STDIN_FILENO) < 0 || ::dup2(null.get(), STDOUT_FILENO) < 0
            || ::dup2(null.get(), STDERR_FILENO) < 0)
            fail(errno);
        if (!cwd.isEmpty() && ::chdir(cwd.constData()) != 0)
            fail(errno);
        if (spec.modifier)
            spec.modifier();
        ::execve(argvp[0], argvp.data(), envpp.data());
        fail(errno);
    }
    // Started once exec closed the report pipe; an errno there says why it could not.
    reportWrite.reset();
    int error = 0;
    ssize_t n = -1;
    do {
        n = ::read(reportRead.get(), &error, sizeof error);
    } while (n < 0 && errno == EINTR);
    if (n == ssize_t(sizeof error)) {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        return Error{ErrorCode::SandboxError, errnoText(error), {}};
    }
    m_pid = pid;
    // Race-free: the pid cannot be reused before it is reaped, here.
    m_pidfd = UniqueFd(int(::syscall(SYS_pidfd_open, pid, 0)));
    const bool watched = m_pidfd.isValid()
                         && m_poller->add(m_pidfd.get(), EPOLLIN, [this](uint32_t) { onExited(); });
    if (!watched) {
        const int e = errno;
        ::kill(pid, SIGKILL);
        reap(-1);
        m_pidfd.reset();
        return Error{ErrorCode::SandboxError,
                     QStringLiteral("cannot watch it: ") + errnoText(e),
                     {}};
    }
    return true;
}

void ChildProcess::kill()
{
    if (m_pid > 0)
        ::kill(m_pid, SIGKILL);
}

bool ChildProcess::reap(int waitMs)
{
    if (m_pid <= 0)
        return true;
    if (waitMs != 0 && m_pidfd.isValid()) {
        pollfd p{m_pidfd.get(), POLLIN, 0};
        while (::poll(&p, 1, waitMs) < 0 && errno == EINTR) {
        }
    }
    int status = 0;
    pid_t r = -1;
    do {
        r = ::waitpid(m_pid, &status, waitMs < 0 ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return false;
    m_crashed = r < 0 || WIFSIGNALED(status);
    m_exitCode = r > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    m_pid = 0;
    return true;
}

void ChildProcess::onExited()
{
    if (!reap(0))
        return; // a spurious wake-up
    if (m_poller)
        m_poller->remove(m_pidfd.get());
    m_pidfd.reset();
    Q_EMIT finished(m_exitCode, m_crashed);
}

} // namespace Sandbox::Engine
