/* The pod sandbox ("pause") process of the e2e cluster's pause image (scripts/e2e/images.sh):
 * holds the pod's namespaces, waits for SIGTERM or SIGINT, and reaps the children that get
 * reparented to it as PID 1 of a shared PID namespace. Built with gcc -static.
 * The signals are blocked and taken with sigwait, so none can slip in between a check and a sleep;
 * the handlers are installed anyway because PID 1 of a namespace never gets a signal it leaves
 * at SIG_DFL. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

static void noop(int sig) { (void)sig; }

int main(void) {
  static const int sigs[] = {SIGTERM, SIGINT, SIGCHLD};
  struct sigaction sa = {0};
  sigset_t set;
  sigemptyset(&set);
  sa.sa_handler = noop;
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    sigaddset(&set, sigs[i]);
    if (sigaction(sigs[i], &sa, NULL) != 0) {
      perror("pause: sigaction");
      return 1;
    }
  }
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
    perror("pause: sigprocmask");
    return 1;
  }
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    if (sig != SIGCHLD) return 0;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
  }
}
