#ifndef HTTPDNS_CARES_SHIM_H
#define HTTPDNS_CARES_SHIM_H
#include <ares.h>
/* The event thread wakes through an eventfd; Glibc does not export this header to Swift. */
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* gettid(2) and naming the calling thread: GNU extensions Swift's Glibc module does not show, and variadic
   calls Swift cannot make. */
static inline int httpdns_current_thread_id(void) { return (int)syscall(SYS_gettid); }
static inline void httpdns_name_current_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }
#endif
