// C++ allocation through every form of the global operator new and delete
// that comex run's runtime interposes (src/rt/interpose_cxx.c): containers
// of N records, over-aligned objects, nothrow and failing allocations, and
// the new_handler. Prints what it saw and a checksum; the same natively.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

struct alignas(256) Block {
	uint64_t v[32];
};

static int handler_calls;
static void *volatile sink; // the allocations below must happen: no new elided
static void handler()
{
	handler_calls++;
	std::set_new_handler(nullptr); // the next failure throws
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 200000;
	uint64_t sum = 0;
	std::map<uint64_t, std::string> records;
	std::vector<std::unique_ptr<Block>> blocks;
	std::vector<std::unique_ptr<uint64_t[]>> arrays;

	for (size_t i = 0; i < n; i++) {
		records[i * 2654435761u % n] = std::string(64 + i % 200, (char)('a' + i % 26));
		if (i % 8 == 0) {
			blocks.emplace_back(new Block());
			if ((uintptr_t)blocks.back().get() % alignof(Block))
				return printf("misaligned Block\n"), 1;
			blocks.back()->v[i % 32] = i;
		}
		if (i % 64 == 0) {
			arrays.emplace_back(new uint64_t[512]());
			arrays.back()[i % 512] = i;
		}
	}
	for (const auto &r : records)
		sum = sum * 31 + r.first + r.second.size() + (uint8_t)r.second[0];
	for (const auto &b : blocks)
		for (uint64_t x : b->v)
			sum = sum * 7 + x;
	for (const auto &a : arrays)
		for (size_t j = 0; j < 512; j++)
			sum += a[j] * j;
	printf("records %zu blocks %zu arrays %zu sum %llu\n", records.size(), blocks.size(), arrays.size(),
	       (unsigned long long)sum);

	size_t huge = SIZE_MAX / 4;
	sink = new (std::nothrow) char[huge];
	printf("nothrow huge: %s\n", sink ? "allocated" : "null");
	sink = new (std::nothrow) Block[huge / sizeof(Block) / 2];
	printf("nothrow aligned huge: %s\n", sink ? "allocated" : "null");
	try {
		sink = new char[huge];
		printf("huge: allocated\n");
	} catch (const std::bad_alloc &) {
		printf("huge: bad_alloc\n");
	}
	std::set_new_handler(handler);
	try {
		sink = new Block[huge / sizeof(Block) / 2];
		printf("aligned huge: allocated\n");
	} catch (const std::bad_alloc &) {
		printf("aligned huge: bad_alloc after %d new_handler call(s)\n", handler_calls);
	}
	return 0;
}
