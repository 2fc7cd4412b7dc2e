// For fixture programs (C) that run jobs read from stdin: forks a child that takes the job loop
// over (it inherits stdin and stdout) and prints "forked PID"; the parent waits for the child
// and exits with it. Returns in the child only, as a preforking server's worker goes on.
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void hand_over_to_child(void) {
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) return;
  printf("forked %d\n", (int)child);
  fflush(stdout);
  int status = 0;
  waitpid(child, &status, 0);
  exit(child > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}
