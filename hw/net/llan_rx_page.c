/*
 * Legacy page-mode receive buffers.  Each scan reads the whole page once
 * through the TCE table and walks a host copy, so a scan costs one
 * translation and at most 509 steps whatever the guest wrote.
 */
#include "hw/net/llan_rx_page.h"
#include "hw/net/llan_bd.h"
#include "qemu/bswap.h"

#include <string.h>


/* A pointer that is not a slot (never set by us, but a migration stream
 * could carry one) restarts the ring at its first slot. */
static uint32_t next_slot(uint32_t ptr)
{
    if (ptr % 8 || ptr < LLAN_PAGE_SLOTS_START - 8 ||
        ptr >= LLAN_PAGE_SLOTS_END) {
        return LLAN_PAGE_SLOTS_START;
    }
    ptr += 8;
    return ptr >= LLAN_PAGE_SLOTS_END ? LLAN_PAGE_SLOTS_START : ptr;
}


static bool write_slot(SpaprVioDevice *dev, uint64_t buf_list, uint32_t ptr,
                       uint64_t bd)
{
    uint8_t be[8];

    stn_be_p(be, 8, bd);
    return spapr_vio_dma_write(dev, buf_list + ptr, be, sizeof(be));
}

LlanPageResult llan_rx_page_add(SpaprVioDevice *dev, uint64_t buf_list,
                                uint32_t *add_ptr, uint64_t bd)
{
    uint8_t page[LLAN_PAGE_SLOTS_END];
    uint32_t ptr = *add_ptr;

    if (!spapr_vio_dma_read(dev, buf_list, page, sizeof(page))) {
        return LLAN_PAGE_DMA_ERROR;
    }
    for (int i = 0; i < LLAN_PAGE_SLOTS; i++) {
        ptr = next_slot(ptr);
        if (!(ldn_be_p(page + ptr, 8) & LLAN_BD_VALID)) {
            if (!write_slot(dev, buf_list, ptr, bd)) {
                return LLAN_PAGE_DMA_ERROR;
            }
            *add_ptr = ptr;
            return LLAN_PAGE_OK;
        }
    }
    return LLAN_PAGE_NONE;
}

LlanPageResult llan_rx_page_take_first_fit(SpaprVioDevice *dev,
                                           uint64_t buf_list,
                                           uint32_t *use_ptr, uint32_t need,
                                           uint64_t *bd)
{
    uint8_t page[LLAN_PAGE_SLOTS_END];
    uint32_t ptr = *use_ptr;

    if (!spapr_vio_dma_read(dev, buf_list, page, sizeof(page))) {
        return LLAN_PAGE_DMA_ERROR;
    }
    for (int i = 0; i < LLAN_PAGE_SLOTS; i++) {
        uint64_t candidate;

        ptr = next_slot(ptr);
        candidate = ldn_be_p(page + ptr, 8);
        if ((candidate & LLAN_BD_VALID) && LLAN_BD_LEN(candidate) >= need) {
            if (!write_slot(dev, buf_list, ptr, 0)) {
                return LLAN_PAGE_DMA_ERROR;
            }
            *bd = candidate;
            *use_ptr = ptr;
            return LLAN_PAGE_OK;
        }
    }
    return LLAN_PAGE_NONE;
}

void llan_rx_page_clear_slot(SpaprVioDevice *dev, uint64_t buf_list,
                             uint32_t ptr)
{
    write_slot(dev, buf_list, ptr, 0);
}
