/*
 * Big-endian loads and stores of every size from 1 to 8 bytes, at an
 * odd address, and stores that touch nothing past their size.
 */
#include "qemu/bswap.h"

#include <glib.h>
#include <string.h>

static const uint8_t bytes[9] = { 0xaa, 0x81, 0x02, 0x83, 0x04,
                                  0x85, 0x06, 0x87, 0x08 };

/* The value of @size bytes from bytes[1], most significant first. */
static uint64_t expected(unsigned size)
{
    uint64_t v = 0;

    for (unsigned i = 1; i <= size; i++) {
        v = v << 8 | bytes[i];
    }
    return v;
}

static void test_load(void)
{
    for (unsigned size = 1; size <= 8; size++) {
        g_assert_cmphex(ldn_be_p(bytes + 1, size), ==, expected(size));
    }
}

static void test_store(void)
{
    for (unsigned size = 1; size <= 8; size++) {
        uint8_t buf[10];

        memset(buf, 0x5a, sizeof(buf));
        stn_be_p(buf + 1, size, expected(size));
        g_assert_cmpmem(buf + 1, size, bytes + 1, size);
        g_assert_cmphex(buf[0], ==, 0x5a);
        for (unsigned i = size + 1; i < sizeof(buf); i++) {
            g_assert_cmphex(buf[i], ==, 0x5a);
        }
    }
}

/* A store keeps only the low @size bytes of its value. */
static void test_store_truncates(void)
{
    uint8_t buf[4] = { 0 };

    stn_be_p(buf, 2, 0x123456789abcdef0ULL);
    g_assert_cmphex(buf[0], ==, 0xde);
    g_assert_cmphex(buf[1], ==, 0xf0);
    g_assert_cmphex(buf[2], ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bswap/load", test_load);
    g_test_add_func("/bswap/store", test_store);
    g_test_add_func("/bswap/store-truncates", test_store_truncates);
    return g_test_run();
}
