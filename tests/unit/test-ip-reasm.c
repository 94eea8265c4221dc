/*
 * The truesize a ppc64le Linux 6.1 guest with ibmveth charges per frame.
 */
#include "guest/skb-truesize.h"

#include <glib.h>

#define PAGE_64K        65536
#define BIG_TRUESIZE    131328  /* any frame in a 64 KiB buffer */

static void test_truesize(void)
{
    const uint32_t pages[] = { 4096, PAGE_64K };

    for (size_t i = 0; i < G_N_ELEMENTS(pages); i++) {
        /* Copied out below rx_copybreak: a kmalloc-1k head, any buffer. */
        g_assert_cmpuint(ibmveth_rx_truesize(64, 512, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(64, 2048, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(64, 65536, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(127, 65536, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(128, 65536, pages[i]), ==,
                         BIG_TRUESIZE);
        /* 2048 + 128 + 384 from the page-fragment cache. */
        g_assert_cmpuint(ibmveth_rx_truesize(1514, 2048, pages[i]), ==, 2816);
        /* 65536 + 128 + 384 is kmalloc'd: 128 KiB. */
        g_assert_cmpuint(ibmveth_rx_truesize(1514, 65536, pages[i]), ==,
                         BIG_TRUESIZE);
        /* 512 + 128 is still a small head, 513 + 128 is not. */
        g_assert_cmpuint(ibmveth_rx_truesize(429, 512, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(429, 513, pages[i]), ==, 1408);
    }
    /* Where the page size matters: a 16 KiB buffer fits a 64 KiB page. */
    g_assert_cmpuint(ibmveth_rx_truesize(1514, 16384, PAGE_64K), ==, 17152);
    g_assert_cmpuint(ibmveth_rx_truesize(1514, 16384, 4096), ==, 33024);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ip-reasm/truesize", test_truesize);
    return g_test_run();
}
