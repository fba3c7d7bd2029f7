// A program that replaces only the plain operator new and delete (a size
// header before every block, as pools and leak checkers do): every other
// form (new[], sized and nothrow delete, nothrow new) must reach them, as
// the C++ runtimes make it, also under comex run's runtime, which defines
// them all (src/rt/interpose_cxx.c). Prints counts and a checksum.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

static size_t news, deletes;

void *operator new(size_t n)
{
	size_t *p = static_cast<size_t *>(malloc(n + 16));
	if (!p)
		throw std::bad_alloc();
	p[0] = 0x5eed;
	p[1] = n;
	news++;
	return p + 2;
}

void operator delete(void *q) noexcept
{
	if (!q)
		return;
	size_t *p = static_cast<size_t *>(q) - 2;
	if (p[0] != 0x5eed) {
		fprintf(stderr, "delete of a block the replacement did not make\n");
		abort();
	}
	p[0] = 0;
	deletes++;
	free(p);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 100000;
	uint64_t sum = 0;
	std::vector<std::string *> v;

	for (size_t i = 0; i < n; i++) {
		v.push_back(new std::string(40 + i % 100, (char)('a' + i % 26)));
		int *a = new int[16 + i % 16];
		a[0] = (int)i;
		sum += (uint64_t)a[0];
		delete[] a;
		char *c = new (std::nothrow) char[100];
		sum += c ? 1 : 0;
		delete[] c;
	}
	for (auto *s : v) {
		sum = sum * 31 + s->size();
		delete s;
	}
	v.clear();
	v.shrink_to_fit();
	printf("every block made by the replacement was deleted by it: %s, sum %llu\n",
	       news == deletes && news >= n ? "yes" : "no", (unsigned long long)sum);
	return 0;
}
