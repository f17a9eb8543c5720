/* Timers the relax example calls from Fortran (timer_begin_ / timer_end_): linked into the
 * reference build through the workflow's build: sources; the translations call them where the
 * program links them. */
#include <stdio.h>
#include <time.h>

static double started[8];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

void timer_begin_(const int *k) { started[*k & 7] = now(); }

void timer_end_(const int *k) { (void)(now() - started[*k & 7]); }
