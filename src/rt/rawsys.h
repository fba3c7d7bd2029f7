/* rawsys: what the runtime needs of the machine below the C library: the
 * kernel's system call, and the CPU's spin-wait hint. The runtime interposes
 * syscall() (interpose_fd.c), so the code behind it, and the registry of
 * the runtime's descriptors it calls, must not call back into it. raw6
 * returns the kernel's value (-errno on failure); sys_ret turns it into the
 * C library's convention. */
#ifndef COMEX_RT_RAWSYS_H
#define COMEX_RT_RAWSYS_H

#include <errno.h>

static inline long raw6(long n, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c,
		      x3 __asm__("x3") = d, x4 __asm__("x4") = e, x5 __asm__("x5") = f;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
	return x0;
#else
#error "rawsys: no raw system calls for this architecture"
#endif
}

/* One step of a spin-wait: lets the sibling hyperthread run and saves power. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* -1 with errno set for a kernel error value, else the value */
static inline long sys_ret(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#endif
