/*
 * The least a stdio proxy can do: start the command given as arguments, copy standard
 * input to its input and its output to standard output with poll(2), and nothing else.
 * The MCP benchmarks measure debussy against it. Built by the benchmark with `cc -O2`.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, ssize_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, (size_t)len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= n;
    }
    return 0;
}

int main(int argc, char **argv) {
    int to_child[2], from_child[2];
    if (argc < 2 || pipe(to_child) != 0 || pipe(from_child) != 0)
        return 2;
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    struct pollfd fds[2] = {{0, POLLIN, 0}, {from_child[0], POLLIN, 0}};
    static char buf[65536];
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[0].revents) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n <= 0 || write_all(to_child[1], buf, n) != 0) {
                close(to_child[1]);
                fds[0].fd = -1;
            }
        }
        if (fds[1].revents) {
            ssize_t n = read(from_child[0], buf, sizeof buf);
            if (n <= 0 || write_all(1, buf, n) != 0)
                break;
        }
    }
    int status;
    waitpid(pid, &status, 0);
    return 0;
}
