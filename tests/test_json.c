/* test_json: the JSON writer's text: layout, escaping, null for NaN, a text that does not fit. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "json.h"
#include "testing.h"

int main(void)
{
	char buf[512], small[16];
	struct json j;

	json_init(&j, buf, sizeof(buf));
	json_open(&j, NULL, '{', true);
	json_str(&j, "s", "a\"b\\c\n\x01");
	json_int(&j, "i", -3);
	json_open(&j, "rows", '[', true);
	json_open(&j, NULL, '{', false);
	json_uint(&j, "u", 18446744073709551615ull);
	json_num(&j, "x", "%.1f", 2.25);
	json_num(&j, "n", "%.1f", NAN);
	json_close(&j);
	json_close(&j);
	json_open(&j, "empty", '[', true);
	json_close(&j);
	json_open(&j, "h", '[', false);
	json_uint(&j, NULL, 1);
	json_uint(&j, NULL, 2);
	json_close(&j);
	json_close(&j);
	CHECK(json_end(&j) == (int)strlen(buf));
	CHECK(!strcmp(buf, "{\n"
			   "  \"s\": \"a\\\"b\\\\c\\u000a\\u0001\",\n"
			   "  \"i\": -3,\n"
			   "  \"rows\": [\n"
			   "    {\"u\": 18446744073709551615, \"x\": 2.2, \"n\": null}\n"
			   "  ],\n"
			   "  \"empty\": [],\n"
			   "  \"h\": [1, 2]\n"
			   "}\n"));

	/* too long for the buffer: -ENOSPC, the buffer still a terminated string */
	json_init(&j, small, sizeof(small));
	json_open(&j, NULL, '[', false);
	json_str(&j, NULL, "more than sixteen bytes");
	json_close(&j);
	CHECK(json_end(&j) == -ENOSPC);
	CHECK(strlen(small) < sizeof(small));
	return 0;
}
