/*
 * launch.c -- the command of `vgpu run` as a child that vgpu run waits for.
 *
 * vgpu run stays behind its command so that it can remove the command's
 * per-run region file afterwards. Meanwhile it behaves as system() does:
 * SIGINT and SIGQUIT, which a terminal sends to the whole foreground group
 * (the command included), are ignored here; SIGTERM and SIGHUP, which may be
 * aimed at vgpu run alone, are passed on to the command. The command's exit
 * status becomes vgpu run's.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t g_child;

static void relay(int sig) {
  if (g_child > 0) kill((pid_t)g_child, sig);
}

static void handle(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

int vg_launch(char **command) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execvp(command[0], command);
    fprintf(stderr, "vgpu run: cannot run %s: %s\n", command[0], strerror(errno));
    _exit(127);
  }
  g_child = pid;
  handle(SIGINT, SIG_IGN);
  handle(SIGQUIT, SIG_IGN);
  handle(SIGTERM, relay);
  handle(SIGHUP, relay);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return status;
}

int vg_launch_exit(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (!WIFSIGNALED(status)) return 1;
  /* Die of the same signal, so that a shell sees what the command saw;
   * without a core file, which would be vgpu's and not the command's. */
  int sig = WTERMSIG(status);
  struct rlimit none = {0, 0};
  setrlimit(RLIMIT_CORE, &none);
  handle(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  return 128 + sig;
}
