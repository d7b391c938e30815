/*
 * Lends Debian's glibc-built libstdc++ and libgcc_s to the linux-x64-musl build of ath, which needs musl builds of
 * them (Alpine has those, Debian does not). Under musl's loader those two libraries miss a handful of glibc symbols;
 * this file, compiled with musl-gcc as `ld-linux-x86-64.so.2` (a library libstdc++ names), defines them. For the
 * tests only: a person on Alpine installs libstdc++ with apk.
 */
#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

uint32_t arc4random(void) {
  uint32_t v = 0;
  while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
  }
  return v;
}

size_t __strftime_l(char *s, size_t n, const char *f, const struct tm *tm, locale_t l) { return strftime_l(s, n, f, tm, l); }

/* thread_local destructors are not run at thread exit (a leak per thread, harmless for a test) */
int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso) {
  (void)dtor, (void)obj, (void)dso;
  return 0;
}

/* 0: libstdc++ takes its thread-safe paths */
char __libc_single_threaded = 0;

/* -1: "not found", so libgcc's unwinder falls back to dl_iterate_phdr, which musl has */
int _dl_find_object(void *pc, void *result) {
  (void)pc, (void)result;
  return -1;
}

/* libgcc's CPU model: zero is "unknown", which takes the generic code paths */
struct { unsigned vendor, type, subtype, features[1]; } __cpu_model;
int __cpu_indicator_init(void) { return 0; }
