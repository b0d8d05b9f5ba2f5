#ifndef HTTPDNS_CARES_SHIM_H
#define HTTPDNS_CARES_SHIM_H
#include <ares.h>
/* The event thread wakes through an eventfd; Glibc does not export this header to Swift. */
#include <sys/eventfd.h>
#endif
