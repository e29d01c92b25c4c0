#pragma once
// NDG_FAST_TLS marks a thread_local that every eager op reads. In a shared library a thread_local
// is reached through a __tls_get_addr call (the general-dynamic model), 2% of a tiny op's host
// instructions over the dozen such reads; the initial-exec model makes each one load relative to
// the thread pointer. Only these few variables use it (under 100 bytes together), well inside
// the static TLS space glibc keeps for libraries loaded later with dlopen.
#if defined(__GNUC__) || defined(__clang__)
#define NDG_FAST_TLS __attribute__((tls_model("initial-exec")))
#else
#define NDG_FAST_TLS
#endif
